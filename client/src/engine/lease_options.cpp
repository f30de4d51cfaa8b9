/// @file lease_options.cpp
/// @brief Validation of lease settings.
#include "pglease/lease_options.hpp"

#include "pglease/error.hpp"

namespace pglease {

namespace {

/// A lease name or identity: 1 to 255 bytes, no NUL (the server's rules).
void validate_text(const std::string& value, const std::string& what) {
    if (value.empty())
        throw config_error{what + " must not be empty"};
    if (value.size() > 255)
        throw config_error{what + " must be at most 255 bytes"};
    if (value.find('\0') != std::string::npos)
        throw config_error{what + " must not contain a NUL byte"};
}

} // namespace

void validate_lease_name(const std::string& name) {
    validate_text(name, "lease name");
}

void lease_options::validate() const {
    validate_text(identity, "identity");
    if (ttl <= std::chrono::milliseconds::zero())
        throw config_error{"ttl must be positive"};
    const auto margin = effective_safety_margin();
    if (margin < std::chrono::milliseconds::zero())
        throw config_error{"safety margin must not be negative"};
    if (margin >= ttl)
        throw config_error{"safety margin must be shorter than ttl"};
    if (retry_period <= std::chrono::milliseconds::zero())
        throw config_error{"retry period must be positive"};
    if (lock_delay < std::chrono::milliseconds::zero())
        throw config_error{"lock delay must not be negative"};
}

} // namespace pglease
