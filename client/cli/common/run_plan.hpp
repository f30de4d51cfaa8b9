/// @file run_plan.hpp
/// @brief The timings of `pglease run`, derived from --ttl and --kill-after.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace pglease::cli {

/// When `pglease run` renews, gives up and kills, for one ttl.
///
/// After a renew (or the acquire) *sent* at time t, the lease's local
/// deadline is t + ttl - safety_margin, which is before the server's expiry
/// (>= t + ttl). The job's process group gets SIGTERM at the step-down point,
/// deadline - kill_after, and SIGKILL at the deadline at the latest, so the
/// job is gone before the lease can expire in store time. Renewals happen at
/// t + renew_every and are retried every retry until the step-down point.
struct run_timing {
    std::chrono::milliseconds ttl{};
    std::chrono::milliseconds safety_margin{}; ///< min(ttl / 10, 1s), as the library
    std::chrono::milliseconds kill_after{};    ///< SIGTERM -> SIGKILL grace
    std::chrono::milliseconds renew_every{};   ///< ttl / 3
    std::chrono::milliseconds retry{};         ///< clamp(ttl / 10, 50ms, 2s)
    std::chrono::milliseconds call_timeout{};  ///< clamp(ttl / 5, 100ms, 2s): bound of one call

    /// Time from a renew's send time to the step-down point:
    /// ttl - safety_margin - kill_after.
    [[nodiscard]] std::chrono::milliseconds step_down_after() const noexcept {
        return ttl - safety_margin - kill_after;
    }
};

/// The smallest --ttl `run` accepts.
inline constexpr std::chrono::milliseconds min_run_ttl{300};

/// Default --kill-after for @p ttl: min(ttl / 5, 10s).
[[nodiscard]] std::chrono::milliseconds default_kill_after(std::chrono::milliseconds ttl) noexcept;

/// Checks and derives the timings. Rules: ttl >= min_run_ttl;
/// 0 <= kill_after <= ttl / 3 (so that SIGKILL falls before the local
/// deadline with time for renew retries before the step-down point).
/// Returns nullopt and a message in @p error when a rule is broken.
[[nodiscard]] std::optional<run_timing>
plan_run(std::chrono::milliseconds ttl, std::optional<std::chrono::milliseconds> kill_after,
         std::string& error);

} // namespace pglease::cli
