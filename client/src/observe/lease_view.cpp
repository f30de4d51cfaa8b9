/// @file lease_view.cpp
/// @brief The changes an observer reports, from two readings.
#include "pglease/internal/lease_view.hpp"

namespace pglease {

std::optional<lease_change> compare(const lease_view& before, const lease_view& after) noexcept {
    if (after.valid && (!before.valid || before.epoch != after.epoch))
        return lease_change::acquired;
    if (before.valid && !after.valid)
        return after.holder.empty() ? lease_change::freed : lease_change::expired;
    return std::nullopt;
}

const char* to_string(lease_change change) noexcept {
    switch (change) {
    case lease_change::acquired:
        return "acquired";
    case lease_change::freed:
        return "freed";
    case lease_change::expired:
        return "expired";
    }
    return "unknown";
}

} // namespace pglease
