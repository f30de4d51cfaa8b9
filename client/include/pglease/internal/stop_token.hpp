/// @file stop_token.hpp
/// @brief The "stop leading" signal handed to on_started_leading, and the
/// source the elector signals it with (C++17 has no std::stop_token).
#pragma once

#include "pglease/internal/clock.hpp"

#include <chrono>
#include <memory>

namespace pglease {

namespace detail {
struct stop_state;
} // namespace detail

/// Tells leader work when to stop. It reads as stopped once the elector
/// signalled it (loss, fence rejection, stop) *or* once the local deadline
/// of the lease passed, so it is on time even if the elector's own thread
/// is stuck in a call. Cheap to copy; thread-safe.
///
/// @code
///   callbacks.on_started_leading = [](std::int64_t epoch, pglease::stop_token stop) {
///       while (!stop.wait_for(std::chrono::seconds{1}))
///           do_one_unit_of_work(epoch);
///   };
/// @endcode
class stop_token {
public:
    /// A token that never stops.
    stop_token() = default;

    /// True once stop was requested or the lease's local deadline passed.
    [[nodiscard]] bool stop_requested() const noexcept;

    /// Sleeps until stop is requested or @p timeout passed; returns
    /// stop_requested().
    bool wait_for(std::chrono::nanoseconds timeout) const;

    /// Sleeps until stop is requested or @p until; returns stop_requested().
    bool wait_until(clock::time_point until) const;

    /// Sleeps until stop is requested.
    void wait() const;

private:
    friend class stop_source;
    explicit stop_token(std::shared_ptr<detail::stop_state> state) noexcept
        : m_state{std::move(state)} {}

    std::shared_ptr<detail::stop_state> m_state;
};

/// The owner's side of a stop_token. Signalling is final.
class stop_source {
public:
    /// A source whose tokens also stop at the deadline set_deadline() gives,
    /// read on @p clk (which must outlive every token).
    explicit stop_source(const clock& clk = system_clock());

    /// A token that observes this source.
    [[nodiscard]] stop_token token() const noexcept { return stop_token{m_state}; }

    /// Signals every token and wakes their waiters. Idempotent.
    void request_stop() noexcept;

    /// Moves the deadline after which tokens read as stopped.
    void set_deadline(clock::time_point deadline) noexcept;

    /// True once request_stop() was called or the deadline passed.
    [[nodiscard]] bool stop_requested() const noexcept { return token().stop_requested(); }

private:
    std::shared_ptr<detail::stop_state> m_state;
};

} // namespace pglease
