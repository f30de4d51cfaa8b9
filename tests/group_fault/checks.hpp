/// @file checks.hpp
/// @brief The history checks of the group fault test, over lease_events and
/// the fenced writes.
#pragma once

#include <pqxx/pqxx>

#include <string>
#include <vector>

namespace pglease::group_fault {

/// Violations (empty: none): a shard granted to a holder while the previous
/// grant was neither released nor expired (only a takeover may end it), an
/// epoch that does not grow; a write of an older epoch committed after one
/// of a newer epoch; an epoch written by two members or by a member it was
/// not granted to. @p grants and @p writes receive the counts checked.
std::vector<std::string> check_history(pqxx::connection& conn, const std::string& shard_prefix,
                                       long& grants, long& writes);

} // namespace pglease::group_fault
