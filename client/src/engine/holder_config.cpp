/// @file holder_config.cpp
/// @brief The timing rules every holder's config shares.
#include "pglease/internal/holder_config.hpp"

#include "pglease/error.hpp"

#include <algorithm>

namespace pglease {

using std::chrono::milliseconds;

milliseconds holder_config::effective_safety_margin() const noexcept {
    if (safety_margin)
        return *safety_margin;
    return std::min(ttl / 10, milliseconds{1000});
}

milliseconds holder_config::renew_interval() const noexcept {
    const auto jittered = milliseconds{
        static_cast<milliseconds::rep>(static_cast<double>(retry_period.count()) * jitter_factor)};
    return std::max(std::min(ttl / 3, renew_deadline - jittered), milliseconds{1});
}

void holder_config::validate_holder() const {
    if (identity.empty() || identity.size() > 255)
        throw config_error{"identity must be 1 to 255 bytes long"};
    if (identity.find('\0') != std::string::npos)
        throw config_error{"identity must not contain a NUL byte"};
    if (ttl <= milliseconds::zero() || renew_deadline <= milliseconds::zero() ||
        retry_period <= milliseconds::zero())
        throw config_error{"ttl, renew deadline and retry period must be positive"};
    if (!(jitter_factor >= 1.0))
        throw config_error{"jitter factor must be at least 1"};
    if (lock_delay < milliseconds::zero())
        throw config_error{"lock delay must not be negative"};
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
}

lease_options holder_config::to_lease_options() const {
    lease_options o;
    o.identity = identity;
    o.ttl = ttl;
    o.safety_margin = effective_safety_margin();
    o.retry_period = retry_period;
    o.lock_delay = lock_delay;
    return o;
}

} // namespace pglease
