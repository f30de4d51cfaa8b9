/// @file lease_set_config.hpp
/// @brief Configuration of pglease::lease_set, validated at construction.
#pragma once

#include "pglease/connection_options.hpp"
#include "pglease/identity.hpp"
#include "pglease/lease_options.hpp"
#include "pglease/stop_token.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pglease {

namespace detail {
struct timing_rules;
}

/// Why a lease_set stopped holding a lease (on_lost's argument).
enum class lease_loss {
    lost, ///< renew refused (NULL), fence rejection, report_lost(), or the local deadline passed
    renew_deadline, ///< no successful renew within renew_deadline (e.g. the connection is gone)
    removed,        ///< remove() (released after on_lost returned)
    stopped,        ///< stop() (released after on_lost returned, with release_on_stop)
};

/// "lost", "renew_deadline", "removed", "stopped".
[[nodiscard]] const char* to_string(lease_loss why) noexcept;

/// What a lease_set calls. Both optional. Both run on the set's one
/// callback thread, in the order the events happened (for each lease:
/// on_acquired, then on_lost, then maybe on_acquired of a new term...), never
/// on the thread that renews: a slow callback delays the callbacks after it,
/// never a renewal. So they must return promptly: start work elsewhere and
/// let it watch the stop_token.
struct lease_set_callbacks {
    /// This process holds @p name now, with @p epoch (its fencing token).
    /// @p stop is signalled when the term ends: the lease lost, removed,
    /// the set stopping, or simply its local deadline passing (so it is on
    /// time even when the set's thread is stuck in a call).
    std::function<void(const std::string& name, std::int64_t epoch, stop_token stop)> on_acquired;

    /// The term of @p name with @p epoch is over (its stop_token was
    /// signalled before). Once per on_acquired. A removed (or, at stop(),
    /// every) lease is released only after this returned, so a new holder
    /// starts after it.
    std::function<void(const std::string& name, std::int64_t epoch, lease_loss why)> on_lost;
};

/// Settings of a lease_set. Every field documents its default; validate()
/// (called by the constructors) rejects inconsistent ones. The timing rules
/// are the elector's (detail::timing_rules), applied to every lease of the
/// set: one lease_renew_many at about ttl / 3 renews all of them; a lease
/// whose renewals fail until its renew deadline is given up before its
/// local deadline (send time of the last successful renewal + ttl - safety
/// margin), which comes before the server's expiry.
struct lease_set_config {
    /// The leases wanted from the start (more with lease_set::add()).
    /// Each a valid lease name (1..255 bytes, no NUL); duplicates ignored.
    std::vector<std::string> names;

    /// Holder identity of every lease. Default: default_identity().
    std::string identity = default_identity();

    /// Time to live of every grant and renewal. Default 15 s.
    std::chrono::milliseconds ttl{15000};

    /// How long renewals may fail, from the send time of the last successful
    /// one, before the set gives its leases up. Default 10 s.
    std::chrono::milliseconds renew_deadline{10000};

    /// Pause between tries to acquire the wanted leases not held, and
    /// between retries after an error (reconnects included). Default 2 s.
    std::chrono::milliseconds retry_period{2000};

    /// Retry pauses are drawn from [retry_period, retry_period x
    /// jitter_factor]. Default 1.2; must be >= 1.
    double jitter_factor{1.2};

    /// Subtracted from ttl for the local deadline. Default (nullopt):
    /// min(ttl / 10, 1 s).
    std::optional<std::chrono::milliseconds> safety_margin;

    /// Release every lease (one round trip) when the set stops. Default true.
    bool release_on_stop = true;

    /// The set's own connection (renewals, acquires, releases; fenced work
    /// runs on the application's connections). Its call_timeout is lowered
    /// to retry_period if longer. Default: PG* environment.
    connection_options connection;

    /// The callbacks (both optional).
    lease_set_callbacks callbacks;

    /// Throws config_error unless: identity 1..255 bytes; every name a valid
    /// lease name; the elector's timing rules (ttl - safety margin >
    /// renew_deadline > retry_period x jitter_factor > 0).
    void validate() const;

    /// The margin in effect.
    [[nodiscard]] std::chrono::milliseconds effective_safety_margin() const noexcept;

    /// When the set renews after a success: ttl / 3, but early enough that
    /// one retry still fits before renew_deadline.
    [[nodiscard]] std::chrono::milliseconds renew_interval() const noexcept;

    /// The lease settings of every lease of the set.
    [[nodiscard]] lease_options to_lease_options() const;

private:
    /// The timing fields, for the rules shared with the other configs.
    [[nodiscard]] detail::timing_rules timing() const;
};

} // namespace pglease
