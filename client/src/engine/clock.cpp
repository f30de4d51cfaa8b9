/// @file clock.cpp
/// @brief The steady_clock-backed clock.
#include "pglease/internal/clock.hpp"

namespace pglease {
namespace {

class steady_source final : public clock {
public:
    [[nodiscard]] time_point now() const noexcept override {
        return std::chrono::steady_clock::now();
    }
};

} // namespace

const clock& system_clock() noexcept {
    static const steady_source instance;
    return instance;
}

std::chrono::steady_clock::time_point to_steady(const clock& c, clock::time_point t) noexcept {
    if (&c == &system_clock())
        return t;
    if (t == clock::time_point::max())
        return t;
    return std::chrono::steady_clock::now() + (t - c.now());
}

} // namespace pglease
