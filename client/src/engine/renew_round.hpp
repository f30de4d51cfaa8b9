/// @file renew_round.hpp
/// @brief What every holder of many leases does the same way (a lease group
/// member, a lease_set): one lease_renew_many round trip for all the leases
/// it holds, the bound of its calls, and its jittered retry pauses.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/lease.hpp"

#include "pglease/internal/clock.hpp"
#include "pglease/internal/holder_config.hpp"

#include <chrono>
#include <random>
#include <string>
#include <vector>

namespace pglease::detail {

/// After an expiry the server reported, wait this much more, so that the
/// server's clock has passed it too.
inline constexpr std::chrono::milliseconds expiry_slack{1};

/// Lowers @p bound so that a call returns before @p l's local deadline and
/// before its renew deadline (send time of its last successful renewal +
/// @p renew_deadline), when @p l is held. No call may outlast them.
void bound_by(clock::time_point& bound, const lease& l,
              std::chrono::milliseconds renew_deadline) noexcept;

/// A pause drawn from [retry_period, retry_period x jitter_factor].
[[nodiscard]] clock::duration jittered(std::chrono::milliseconds retry_period, double jitter_factor,
                                       std::mt19937_64& rng);

/// The outcome of renew_round().
struct renew_round_result {
    bool answered = false;    ///< the round trip succeeded (each lease's answer applied)
    clock::time_point sent{}; ///< the clock when it was sent
    clock::duration took{};   ///< send to reply (answered only)
    /// When the next round is due: renew_interval() after the send time
    /// when answered; otherwise (outcome unknown) a retry period from now,
    /// but not after the call's bound (the earliest renew deadline).
    clock::time_point next{};
};

/// One lease_renew_many for every lease of @p batch (all held by
/// @p config's identity, renewed at its ttl): one round trip, returning or
/// failing by @p bound.
/// Each answer is applied with lease::apply_renewal(): the local deadline
/// moves to the send time + ttl - margin, or the lease is lost (NULL). When
/// the call fails (outcome unknown) nothing changes: the deadlines stay.
renew_round_result renew_round(backend& db, const clock& clk, const holder_config& config,
                               const std::vector<lease*>& batch, clock::time_point bound);

} // namespace pglease::detail
