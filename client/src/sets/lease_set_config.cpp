/// @file lease_set_config.cpp
/// @brief Validation of lease_set settings.
#include "pglease/lease_set_config.hpp"

#include "pglease/error.hpp"

namespace pglease {

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

void lease_set_config::validate() const {
    validate_holder();
    for (const std::string& name : names)
        validate_lease_name(name);
}

} // namespace pglease
