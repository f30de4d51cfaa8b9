/// @file group_format.hpp
/// @brief What `pglease status --group` prints: the members of a lease
/// group and who holds each shard, as a table or JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pglease::cli {

/// One row of lease_group_members.
struct group_member_row {
    std::string member;
    int weight = 1;
    bool valid = false;      ///< the membership lease is held and unexpired
    bool released = false;   ///< no holder: the member left
    std::int64_t shards = 0; ///< valid shard leases it holds
    std::chrono::milliseconds remaining{0};
    std::string expires_at; ///< ISO 8601 (UTC); may be empty
};

/// One row of lease_group_shards.
struct group_shard_row {
    std::string shard;
    std::optional<std::string> holder; ///< nullopt when free
    std::int64_t epoch = 0;
    bool valid = false;
    std::chrono::milliseconds remaining{0};
    std::string expires_at;
};

/// Orders shard (or member) names with their digit runs compared as
/// numbers: "orders/2" before "orders/10".
[[nodiscard]] bool natural_less(const std::string& a, const std::string& b) noexcept;

/// A summary line, a member table (MEMBER WEIGHT STATE SHARDS REMAINING)
/// and a shard table (SHARD HOLDER EPOCH STATE REMAINING EXPIRES_AT).
/// Member states: live, expired, left; shard states as status: held,
/// expired, free.
[[nodiscard]] std::string format_group_table(const std::string& group,
                                             const std::vector<group_member_row>& members,
                                             const std::vector<group_shard_row>& shards);

/// {"group", "members": [{"member","weight","state","valid","shards",
/// "remaining_ms","expires_at"}], "shards": [{"shard","holder"|null,
/// "epoch","state","valid","remaining_ms","expires_at"}], "held", "free"}.
[[nodiscard]] std::string group_json(const std::string& group,
                                     const std::vector<group_member_row>& members,
                                     const std::vector<group_shard_row>& shards);

} // namespace pglease::cli
