/// @file lease_options.hpp
/// @brief Settings of one lease: identity, ttl, safety margin.
#pragma once

#include "pglease/internal/identity.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace pglease {

/// Settings of a pglease::lease (and of scoped_lease).
///
/// The local deadline of a grant is: steady-clock time when the acquire or
/// renew request was *sent* + ttl - safety margin. The server starts its ttl
/// when it executes the request, which is later, so the client's deadline
/// always falls before the server's expiry; the margin additionally absorbs
/// clock-rate differences between client and server (NTP may slew a clock by
/// up to 500 ppm: 7.5 ms over 15 s) and the gap between checking held() and
/// acting on it.
struct lease_options {
    /// Holder identity written to the lease. Default: default_identity().
    std::string identity = default_identity();

    /// Time to live of each grant and renewal. Default 15 s.
    std::chrono::milliseconds ttl{15000};

    /// Subtracted from ttl for the local deadline. Default (nullopt):
    /// min(ttl / 10, 1 s). Must be >= 0 and < ttl.
    std::optional<std::chrono::milliseconds> safety_margin;

    /// Recorded with each new grant (lease_acquire's lock_delay): when this
    /// holder loses the grant without releasing it (it expired, was revoked,
    /// its writers were evicted), no other holder is granted the lease until
    /// lock_delay has passed since. A release skips it. Default 0 (none);
    /// >= 0, and the server refuses more than pg_lease.max_ttl (22023).
    std::chrono::milliseconds lock_delay{0};

    /// acquire_for(): pause after a failed call (e.g. connection lost)
    /// before trying again. Default 500 ms.
    std::chrono::milliseconds retry_period{500};

    /// The margin in effect: safety_margin, or its default.
    [[nodiscard]] std::chrono::milliseconds effective_safety_margin() const noexcept {
        if (safety_margin)
            return *safety_margin;
        return std::min(ttl / 10, std::chrono::milliseconds{1000});
    }

    /// Throws config_error unless: identity is 1..255 bytes, ttl > 0,
    /// 0 <= safety margin < ttl, retry_period > 0, lock_delay >= 0.
    void validate() const;
};

/// Throws config_error unless @p name is a valid lease name (1..255 bytes,
/// no NUL byte).
void validate_lease_name(const std::string& name);

} // namespace pglease
