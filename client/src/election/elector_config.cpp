/// @file elector_config.cpp
/// @brief Validation of elector settings, as client-go validates its config.
#include "pglease/elector_config.hpp"

#include "pglease/error.hpp"

namespace pglease {

void elector_config::validate() const {
    validate_lease_name(lease_name);
    validate_holder();
    if (preferred_successor.size() > 255)
        throw config_error{"preferred successor must be at most 255 bytes"};
    if (!preferred_successor.empty() && preferred_successor == identity)
        throw config_error{"preferred successor must not be the elector's own identity"};
    if (!callbacks.on_started_leading)
        throw config_error{"on_started_leading callback is required"};
    if (!callbacks.on_stopped_leading)
        throw config_error{"on_stopped_leading callback is required"};
}

} // namespace pglease
