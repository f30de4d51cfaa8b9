/// @file clock.hpp
/// @brief The monotonic clock the state machines read, injectable for tests.
///
/// Clock rules of the library: validity is decided by the database server's
/// clock; locally the client only measures elapsed time on a monotonic clock
/// (std::chrono::steady_clock, which keeps counting while the process is
/// stopped). The wall clock (system_clock) is never used for any decision.
#pragma once

#include <chrono>

namespace pglease {

/// A source of monotonic time. The library reads time only through this
/// interface, so tests can inject a fake clock and drive the state machine.
///
/// @code
///   const pglease::clock& c = pglease::system_clock();
///   auto started = c.now();
/// @endcode
class clock {
public:
    using duration = std::chrono::steady_clock::duration;
    using time_point = std::chrono::steady_clock::time_point;

    clock() = default;
    clock(const clock&) = delete;
    clock& operator=(const clock&) = delete;
    virtual ~clock() = default;

    /// Current monotonic time. Must never go backwards; thread-safe.
    [[nodiscard]] virtual time_point now() const noexcept = 0;

protected:
    clock(clock&&) = default;
    clock& operator=(clock&&) = default;
};

/// The process-wide clock backed by std::chrono::steady_clock.
[[nodiscard]] const clock& system_clock() noexcept;

/// Converts a point on @p c to a std::chrono::steady_clock point for
/// condition-variable waits: equal to @p t when @p c is system_clock(), and
/// "now + (t - c.now())" for any other clock.
[[nodiscard]] std::chrono::steady_clock::time_point to_steady(const clock& c,
                                                              clock::time_point t) noexcept;

} // namespace pglease
