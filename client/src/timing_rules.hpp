/// @file timing_rules.hpp
/// @brief The timing rules an elector and a group member share (as
/// client-go validates its leader-election config): one place for the
/// default safety margin, the renew interval and their validation.
#pragma once

#include "pglease/lease_options.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace pglease::detail {

/// The timings of a campaigning client, as its config holds them.
struct timing_rules {
    std::chrono::milliseconds ttl;
    std::chrono::milliseconds renew_deadline;
    std::chrono::milliseconds retry_period;
    double jitter_factor;
    std::optional<std::chrono::milliseconds> safety_margin;

    /// safety_margin, or min(ttl / 10, 1 s).
    [[nodiscard]] std::chrono::milliseconds effective_safety_margin() const noexcept;
    /// min(ttl / 3, renew_deadline - retry_period x jitter_factor), at least 1 ms.
    [[nodiscard]] std::chrono::milliseconds renew_interval() const noexcept;
    /// Throws config_error unless ttl, renew_deadline, retry_period > 0,
    /// jitter_factor >= 1, margin >= 0, ttl - margin > renew_deadline and
    /// renew_deadline > retry_period x jitter_factor.
    void validate() const;
    /// The settings of each lease taken with these timings by @p identity.
    [[nodiscard]] lease_options lease_settings(const std::string& identity) const;
};

/// @p config validated (config_error otherwise), its calls bounded by its
/// retry period, so a blocked call never outlasts a retry.
template <typename Config>
Config validated(Config config) {
    config.validate();
    config.connection.call_timeout = std::min(config.connection.call_timeout, config.retry_period);
    return config;
}

} // namespace pglease::detail
