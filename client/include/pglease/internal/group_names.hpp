/// @file group_names.hpp
/// @brief How a lease group names its leases in the leases table.
///
/// Every lease of a group starts with the reserved prefix "pglease:group/",
/// then the group name with '%' written as "%25" and '/' as "%2F" (so the
/// next '/' always ends it), then what the lease is for:
///
/// @code
///   pglease:group/<group>/member/<weight>/<identity>   a member's membership lease
///   pglease:group/<group>/shard/<shard>                 one shard of the group
/// @endcode
///
/// <weight> is a decimal 1..1000; <identity> and <shard> are the rest of the
/// name, taken as they are (slashes, quotes and all). Two groups, or a
/// member and a shard, can never map to the same lease name, and a lease
/// name that does not start with the prefix is never part of a group. The
/// views lease_group_members and lease_group_shards (extension 1.2) parse
/// names the same way. A whole name is at most 255 bytes, as any lease name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pglease {

/// The prefix every group lease name starts with.
inline constexpr std::string_view group_lease_prefix{"pglease:group/"};

/// The largest member weight.
inline constexpr std::uint32_t max_group_weight = 1000;

/// "pglease:group/<escaped group>/": what every lease of @p group starts with.
[[nodiscard]] std::string group_prefix(const std::string& group);

/// The membership lease of @p identity in @p group, with its @p weight.
[[nodiscard]] std::string group_member_lease(const std::string& group, const std::string& identity,
                                             std::uint32_t weight);

/// The lease of shard @p shard of @p group.
[[nodiscard]] std::string group_shard_lease(const std::string& group, const std::string& shard);

/// A group lease name taken apart.
struct group_lease_name {
    enum class kind { member, shard };
    kind what = kind::shard;
    std::string group;
    std::string shard;        ///< shard leases
    std::string identity;     ///< member leases
    std::uint32_t weight = 0; ///< member leases
};

/// Parses a lease name written by group_member_lease() or
/// group_shard_lease(); nullopt for any other name.
[[nodiscard]] std::optional<group_lease_name> parse_group_lease(std::string_view name);

} // namespace pglease
