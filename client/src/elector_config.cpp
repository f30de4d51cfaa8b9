/// @file elector_config.cpp
/// @brief Validation of elector settings, as client-go validates its config.
#include "pglease/elector_config.hpp"

#include "pglease/error.hpp"

#include <algorithm>

namespace pglease {

using std::chrono::milliseconds;

milliseconds elector_config::effective_safety_margin() const noexcept {
    if (safety_margin)
        return *safety_margin;
    return std::min(ttl / 10, milliseconds{1000});
}

milliseconds elector_config::renew_interval() const noexcept {
    const auto jittered = milliseconds{
        static_cast<milliseconds::rep>(static_cast<double>(retry_period.count()) * jitter_factor)};
    return std::max(std::min(ttl / 3, renew_deadline - jittered), milliseconds{1});
}

void elector_config::validate() const {
    validate_lease_name(lease_name);
    if (identity.empty())
        throw config_error{"identity must not be empty"};
    if (identity.size() > 255)
        throw config_error{"identity must be at most 255 bytes"};
    if (ttl <= milliseconds::zero() || renew_deadline <= milliseconds::zero() ||
        retry_period <= milliseconds::zero())
        throw config_error{"ttl, renew deadline and retry period must be positive"};
    if (!(jitter_factor >= 1.0))
        throw config_error{"jitter factor must be at least 1"};
    if (ttl <= renew_deadline)
        throw config_error{"ttl must be greater than the renew deadline"};
    const auto margin = effective_safety_margin();
    if (margin < milliseconds::zero())
        throw config_error{"safety margin must not be negative"};
    if (ttl - margin <= renew_deadline)
        throw config_error{"ttl minus the safety margin must be greater than the renew deadline"};
    if (static_cast<double>(renew_deadline.count()) <=
        static_cast<double>(retry_period.count()) * jitter_factor)
        throw config_error{"renew deadline must be greater than retry period times jitter factor"};
    if (preferred_successor.size() > 255)
        throw config_error{"preferred successor must be at most 255 bytes"};
    if (!preferred_successor.empty() && preferred_successor == identity)
        throw config_error{"preferred successor must not be the elector's own identity"};
    if (!callbacks.on_started_leading)
        throw config_error{"on_started_leading callback is required"};
    if (!callbacks.on_stopped_leading)
        throw config_error{"on_stopped_leading callback is required"};
}

lease_options elector_config::to_lease_options() const {
    lease_options o;
    o.identity = identity;
    o.ttl = ttl;
    o.safety_margin = effective_safety_margin();
    o.retry_period = retry_period;
    return o;
}

} // namespace pglease
