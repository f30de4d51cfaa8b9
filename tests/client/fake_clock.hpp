/// @file fake_clock.hpp
/// @brief A manually advanced clock for state-machine tests.
#pragma once

#include "pglease/clock.hpp"

#include <atomic>

namespace pglease::test {

/// Starts at an arbitrary fixed point and moves only when advance() is called.
class fake_clock final : public clock {
public:
    fake_clock() = default;

    [[nodiscard]] time_point now() const noexcept override {
        return time_point{duration{m_now.load()}};
    }

    void advance(duration d) noexcept { m_now.fetch_add(d.count()); }

    void advance_to(time_point t) noexcept {
        auto cur = m_now.load();
        while (t.time_since_epoch().count() > cur &&
               !m_now.compare_exchange_weak(cur, t.time_since_epoch().count())) {
        }
    }

    /// The time the clock started at, for offsets in expectations.
    [[nodiscard]] static time_point origin() noexcept {
        return time_point{std::chrono::hours{1000}};
    }

private:
    std::atomic<duration::rep> m_now{origin().time_since_epoch().count()};
};

} // namespace pglease::test
