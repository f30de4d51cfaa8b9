/// @file lease_set_config.hpp
/// @brief Configuration of pglease::lease_set, validated at construction.
#pragma once

#include "pglease/internal/holder_config.hpp"
#include "pglease/internal/stop_token.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pglease {

/// Why a lease_set stopped holding a lease (on_lost's argument).
enum class lease_loss {
    lost, ///< renew refused (NULL), fence rejection, report_lost(), or the local deadline passed
    renew_deadline, ///< no successful renew within renew_deadline (e.g. the connection is gone)
    removed,        ///< remove() (released after on_lost returned)
    stopped,        ///< stop() (released after on_lost returned, with release_on_stop)
    failed, ///< on_acquired threw (released after on_lost returned; tried again a retry period
            ///< later)
};

/// "lost", "renew_deadline", "removed", "stopped", "failed".
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
    /// time even when the set's thread is stuck in a call). If it throws,
    /// the lease is given up (on_lost with lease_loss::failed, then
    /// released) and acquired again no sooner than a retry period later, as
    /// an elector resigns when on_started_leading throws.
    std::function<void(const std::string& name, std::int64_t epoch, stop_token stop)> on_acquired;

    /// The term of @p name with @p epoch is over (its stop_token was
    /// signalled before). Once per on_acquired. A removed (or, at stop(),
    /// every) lease is released only after this returned, so a new holder
    /// starts after it.
    std::function<void(const std::string& name, std::int64_t epoch, lease_loss why)> on_lost;
};

/// Settings of a lease_set. Every field documents its default; validate()
/// (called by the constructors) rejects inconsistent ones. The timing rules
/// are every holder's (holder_config), applied to every lease of the
/// set: one lease_renew_many at about ttl / 3 renews all of them; a lease
/// whose renewals fail until its renew deadline is given up before its
/// local deadline (send time of the last successful renewal + ttl - safety
/// margin), which comes before the server's expiry.
struct lease_set_config : holder_config {
    /// The leases wanted from the start (more with lease_set::add()).
    /// Each a valid lease name (1..255 bytes, no NUL); duplicates ignored.
    std::vector<std::string> names;

    /// The callbacks (both optional).
    lease_set_callbacks callbacks;

    /// Throws config_error unless: identity 1..255 bytes; every name a valid
    /// lease name; the elector's timing rules (ttl - safety margin >
    /// renew_deadline > retry_period x jitter_factor > 0).
    void validate() const;
};

} // namespace pglease
