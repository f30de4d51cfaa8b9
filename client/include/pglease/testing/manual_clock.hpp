/// @file manual_clock.hpp
/// @brief A clock that moves only when told to, for unit tests.
#pragma once

#include "pglease/internal/clock.hpp"

#include <atomic>

namespace pglease::testing {

/// Starts at a fixed point (origin()) and moves only by advance() and
/// advance_to(); never backwards. Thread-safe.
///
/// A lease_store built without a clock owns one of these: advance time with
/// lease_store::advance(), which also runs the background loops that are due.
///
/// @code
///   pglease::testing::manual_clock clk;
///   clk.advance(std::chrono::seconds{5});
///   assert(clk.now() == clk.origin() + std::chrono::seconds{5});
/// @endcode
class manual_clock final : public pglease::clock {
public:
    manual_clock() = default;

    [[nodiscard]] time_point now() const noexcept override {
        return time_point{duration{m_now.load()}};
    }

    /// Moves time forward by @p d (ignored when negative).
    void advance(duration d) noexcept {
        if (d > duration::zero())
            m_now.fetch_add(d.count());
    }

    /// Moves time forward to @p t (no effect if @p t is not later).
    void advance_to(time_point t) noexcept {
        auto cur = m_now.load();
        while (t.time_since_epoch().count() > cur &&
               !m_now.compare_exchange_weak(cur, t.time_since_epoch().count())) {
        }
    }

    /// Where every manual_clock starts.
    [[nodiscard]] static time_point origin() noexcept {
        return time_point{std::chrono::hours{1000}};
    }

private:
    std::atomic<duration::rep> m_now{origin().time_since_epoch().count()};
};

} // namespace pglease::testing
