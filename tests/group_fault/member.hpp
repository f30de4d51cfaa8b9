/// @file member.hpp
/// @brief One member process of the group fault test.
#pragma once

#include <string>

namespace pglease::group_fault {

/// Timing of every member (short, so faults resolve quickly).
struct timing {
    static constexpr int ttl_ms = 2000;
    static constexpr int renew_deadline_ms = 1200;
    static constexpr int retry_ms = 300;
};

/// Runs a group_member of @p group over @p shards shards as @p identity
/// until SIGTERM; each shard's work inserts (shard, epoch, member) into the
/// fenced table gf_writes every @p write_ms. Returns the exit code.
int run_member(const std::string& group, int shards, const std::string& identity, int write_ms);

} // namespace pglease::group_fault
