/// @file lease_set_config.cpp
/// @brief Validation of lease_set settings.
#include "pglease/lease_set_config.hpp"

#include "pglease/error.hpp"

#include <array>

namespace pglease {

const char* to_string(lease_loss why) noexcept {
    static constexpr std::array names{"lost", "renew_deadline", "removed", "stopped", "failed"};
    const auto i = static_cast<std::size_t>(why);
    return i < names.size() ? names[i] : "unknown";
}

void lease_set_config::validate() const {
    validate_holder();
    for (const std::string& name : names)
        validate_lease_name(name);
}

} // namespace pglease
