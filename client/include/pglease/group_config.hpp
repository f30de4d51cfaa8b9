/// @file group_config.hpp
/// @brief Configuration of a lease group member, validated at construction.
#pragma once

#include "pglease/internal/group_assignment.hpp"
#include "pglease/internal/holder_config.hpp"
#include "pglease/internal/stop_token.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pglease {

/// Why a member stops owning a shard.
enum class shard_stop_reason {
    moved,          ///< the assignment gives it to another member (released after the work stops)
    lost,           ///< renew refused, fence rejection, or the local deadline passed
    renew_deadline, ///< no successful renew within renew_deadline
    leaving,        ///< the member stops (released after the work stops)
    failed,         ///< on_shard_started threw (released; tried again a retry period later)
};

/// "moved", "lost", "renew_deadline", "leaving", "failed".
[[nodiscard]] const char* to_string(shard_stop_reason r) noexcept;

/// What a group member calls. All optional.
struct group_callbacks {
    /// Called when this member starts owning @p shard, on a thread of its
    /// own per shard (renewals never wait for it), with the shard's epoch
    /// (its fencing token) and a stop_token that is signalled when the
    /// shard must stop: moved to another member, lost, the member stops, or
    /// simply its local deadline passing. It may run for the whole term and
    /// must return promptly once the token is signalled: the shard is
    /// released (and can go to its new owner) only after it returned. If it
    /// throws, the shard is given up (on_shard_stopped with
    /// shard_stop_reason::failed, then released) and taken again no sooner
    /// than a retry period later, as an elector resigns when
    /// on_started_leading throws.
    std::function<void(const std::string& shard, std::int64_t epoch, stop_token stop)>
        on_shard_started;

    /// Called once per shard term that started, on the member's thread,
    /// after on_shard_started returned (at once when there is none) and
    /// before the shard's lease is released.
    std::function<void(const std::string& shard, std::int64_t epoch, shard_stop_reason why)>
        on_shard_stopped;

    /// Called on the member's thread when the set of live members it reads
    /// from the leases table changed (sorted by identity).
    std::function<void(const std::vector<group_member_info>& members)> on_members_changed;
};

/// Settings of a group member. Every field documents its default;
/// validate() (called by the constructors) rejects inconsistent ones.
///
/// Timing is the elector's (ttl 15 s, renew deadline 10 s, retry 2 s): one
/// lease_renew_many renews the membership lease and every shard held, at
/// about ttl / 3; a shard whose renewals fail until its renew deadline is
/// given up before its local deadline (ttl - safety margin), which comes
/// before the server's expiry. The member reads the group's leases when
/// NOTIFY pg_lease reports an event on one of them, at the expiries it
/// knows of, and at least every retry period x [1, jitter_factor].
struct group_config : holder_config {
    /// Required. Name of the group (1..100 bytes, no NUL).
    std::string group;

    /// Required. The shards, the same list (in any order) on every member:
    /// unique, non-empty names. numbered_shards() makes "orders/0"...
    std::vector<std::string> shards;

    /// Share of the shards relative to the other members (1..1000).
    /// Default 1. It is part of the membership lease's name, so every
    /// member sees it.
    std::uint32_t weight = 1;

    /// The callbacks (all optional).
    group_callbacks callbacks;

    /// Throws config_error unless: group 1..100 bytes without NUL; shards
    /// non-empty, unique, each non-empty, and every lease name (shards and
    /// membership) at most 255 bytes; identity 1..255 bytes; weight in
    /// 1..1000; the elector's timing rules (ttl - safety margin >
    /// renew_deadline > retry_period x jitter_factor > 0).
    void validate() const;
};

/// "<prefix>/0" .. "<prefix>/<count - 1>".
[[nodiscard]] std::vector<std::string> numbered_shards(const std::string& prefix,
                                                       std::size_t count);

} // namespace pglease
