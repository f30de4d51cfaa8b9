/// @file lease_options.cpp
/// @brief Validation of lease settings.
#include "pglease/lease_options.hpp"

#include "pglease/error.hpp"

namespace pglease {

void validate_lease_name(const std::string& name) {
    if (name.empty())
        throw config_error{"lease name must not be empty"};
    if (name.size() > 255)
        throw config_error{"lease name must be at most 255 bytes"};
    if (name.find('\0') != std::string::npos)
        throw config_error{"lease name must not contain a NUL byte"};
}

void lease_options::validate() const {
    if (identity.empty())
        throw config_error{"identity must not be empty"};
    if (identity.size() > 255)
        throw config_error{"identity must be at most 255 bytes"};
    if (identity.find('\0') != std::string::npos)
        throw config_error{"identity must not contain a NUL byte"};
    if (ttl <= std::chrono::milliseconds::zero())
        throw config_error{"ttl must be positive"};
    const auto margin = effective_safety_margin();
    if (margin < std::chrono::milliseconds::zero())
        throw config_error{"safety margin must not be negative"};
    if (margin >= ttl)
        throw config_error{"safety margin must be shorter than ttl"};
    if (retry_period <= std::chrono::milliseconds::zero())
        throw config_error{"retry period must be positive"};
}

} // namespace pglease
