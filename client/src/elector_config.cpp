/// @file elector_config.cpp
/// @brief Validation of elector settings, as client-go validates its config.
#include "pglease/elector_config.hpp"

#include "pglease/error.hpp"
#include "timing_rules.hpp"

#include <algorithm>

namespace pglease {

detail::timing_rules elector_config::timing() const {
    return {ttl, renew_deadline, retry_period, jitter_factor, safety_margin};
}

using std::chrono::milliseconds;

milliseconds elector_config::effective_safety_margin() const noexcept {
    return timing().effective_safety_margin();
}

milliseconds elector_config::renew_interval() const noexcept {
    return timing().renew_interval();
}

void elector_config::validate() const {
    validate_lease_name(lease_name);
    if (identity.empty())
        throw config_error{"identity must not be empty"};
    if (identity.size() > 255)
        throw config_error{"identity must be at most 255 bytes"};
    timing().validate();
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
    return timing().lease_settings(identity);
}

} // namespace pglease
