/// @file pqxx_sqlstate.hpp
/// @brief Internal: the SQLSTATE of a libpqxx exception.
#pragma once

#include <pqxx/except>

#include <string>

namespace pglease::detail {

/// The SQLSTATE behind @p e. libpqxx 6.4 throws some of its specific
/// exception types without the code (insufficient_privilege for 42501, and
/// the transaction_rollback family, which is not even an sql_error); this
/// restores it from the type. Empty when it cannot be known.
[[nodiscard]] std::string sqlstate_of(const pqxx::failure& e);

} // namespace pglease::detail
