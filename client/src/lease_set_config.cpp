/// @file lease_set_config.cpp
/// @brief Validation of lease_set settings.
#include "pglease/lease_set_config.hpp"

#include "pglease/error.hpp"
#include "timing_rules.hpp"

namespace pglease {

namespace {
constexpr std::size_t max_identity = 255;
} // namespace

const char* to_string(lease_loss why) noexcept {
    switch (why) {
    case lease_loss::lost:
        return "lost";
    case lease_loss::renew_deadline:
        return "renew_deadline";
    case lease_loss::removed:
        return "removed";
    case lease_loss::stopped:
        return "stopped";
    }
    return "unknown";
}

detail::timing_rules lease_set_config::timing() const {
    return {ttl, renew_deadline, retry_period, jitter_factor, safety_margin};
}

std::chrono::milliseconds lease_set_config::effective_safety_margin() const noexcept {
    return timing().effective_safety_margin();
}

std::chrono::milliseconds lease_set_config::renew_interval() const noexcept {
    return timing().renew_interval();
}

void lease_set_config::validate() const {
    if (identity.empty() || identity.size() > max_identity)
        throw config_error{"identity must be 1 to 255 bytes long"};
    for (const std::string& name : names)
        validate_lease_name(name);
    timing().validate();
}

lease_options lease_set_config::to_lease_options() const {
    return timing().lease_settings(identity);
}

} // namespace pglease
