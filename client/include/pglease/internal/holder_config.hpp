/// @file holder_config.hpp
/// @brief The settings every holder shares (elector_config,
/// lease_set_config, group_config extend it): who holds, the timing rules,
/// what happens at stop, the connection. Documented and validated once.
#pragma once

#include "pglease/connection_options.hpp"
#include "pglease/lease_options.hpp"

#include "pglease/internal/identity.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace pglease {

/// Timing rules (as client-go validates its leader-election config):
/// - the local deadline is the send time of the last successful
///   acquire/renew + ttl - safety_margin, which comes before the server's
///   expiry: a holder never believes it holds a lease the server gave away;
/// - ttl - safety_margin > renew_deadline: a holder whose renewals keep
///   failing steps down (at the renew deadline) before its local deadline;
/// - renew_deadline > retry_period x jitter_factor: at least one retry fits
///   between a failed renewal and the step-down;
/// - a holder renews at renew_interval(): ttl / 3, but early enough that one
///   retry still fits before the renew deadline.
struct holder_config {
    /// Holder identity (1..255 bytes, no NUL). Default: default_identity()
    /// ("host:pid:random").
    std::string identity = default_identity();

    /// Time to live of every grant and renewal. Default 15 s.
    std::chrono::milliseconds ttl{15000};

    /// How long renewals may fail, from the send time of the last
    /// successful one, before the holder steps down (gives the lease up).
    /// Default 10 s.
    std::chrono::milliseconds renew_deadline{10000};

    /// Pause between tries (acquires, reads, and retries after an error,
    /// reconnects included). Default 2 s.
    std::chrono::milliseconds retry_period{2000};

    /// Retry pauses are drawn from [retry_period, retry_period x
    /// jitter_factor], so candidates do not stampede. Default 1.2; >= 1.
    double jitter_factor{1.2};

    /// Subtracted from ttl for the local deadline. Default (nullopt):
    /// min(ttl / 10, 1 s).
    std::optional<std::chrono::milliseconds> safety_margin;

    /// Recorded with each new grant (see lease_options::lock_delay): a
    /// grant this holder loses without release (expired, revoked, evicted)
    /// keeps every other holder out until lock_delay has passed since. A
    /// release at stop skips it. Default 0 (none); >= 0.
    std::chrono::milliseconds lock_delay{0};

    /// Release what is held when the holder stops (after its work
    /// returned). Default true; false leaves it to expire.
    bool release_on_stop = true;

    /// The holder's own connection (acquires, renewals, releases, LISTEN;
    /// fenced work runs on the application's connections). Its call_timeout
    /// is lowered to retry_period if longer. Default: PG* environment.
    connection_options connection;

    /// The margin in effect.
    [[nodiscard]] std::chrono::milliseconds effective_safety_margin() const noexcept;

    /// When the holder renews after a success (see the rules above).
    [[nodiscard]] std::chrono::milliseconds renew_interval() const noexcept;

    /// The settings of each lease the holder takes.
    [[nodiscard]] lease_options to_lease_options() const;

protected:
    /// Throws config_error unless the identity is 1..255 bytes without NUL,
    /// ttl, renew_deadline, retry_period > 0, jitter_factor >= 1, the
    /// margin >= 0, lock_delay >= 0, and the rules above hold.
    void validate_holder() const;
};

} // namespace pglease
