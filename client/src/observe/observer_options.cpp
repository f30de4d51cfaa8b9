/// @file observer_options.cpp
/// @brief Validation of observer settings.
#include "pglease/observer_options.hpp"

#include "pglease/error.hpp"
#include "pglease/lease_options.hpp"

namespace pglease {

void observer_options::validate() const {
    validate_lease_name(lease_name);
    if (resync_period <= std::chrono::milliseconds::zero() ||
        retry_period <= std::chrono::milliseconds::zero())
        throw config_error{"resync period and retry period must be positive"};
}

} // namespace pglease
