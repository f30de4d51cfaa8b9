/// @file loop_thread.hpp
/// @brief Internal (used by the holders' headers, not an API): the one
/// thread a holder (elector, lease_set,
/// group_member, observer) runs its loop on, and its stop order.
#pragma once

#include "engine/pinned.hpp"
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

namespace pglease::detail {

/// Started at most once, never after stop() began. stop() marks stopping,
/// wakes the loop (the owner's @p wake: tell the work, interrupt the wait),
/// then joins, except from the loop's own thread (a callback that stops
/// its holder): then it only asks, and the owner's destructor joins.
class loop_thread : pinned { // NOLINT(cppcoreguidelines-special-member-functions)
public:
    loop_thread() = default;
    /// Joins a thread still running (the owner's destructor called stop()).
    ~loop_thread() {
        if (m_thread.joinable() && m_thread.get_id() != std::this_thread::get_id())
            m_thread.join();
    }

    /// Runs @p before, then starts @p body on the thread, both under the
    /// same lock as stop()'s check, unless the thread runs or stop() began.
    void start(const std::function<void()>& before, std::function<void()> body) {
        const std::lock_guard lock{m_mutex};
        if (m_thread.joinable() || m_stopping.load())
            return;
        if (before)
            before();
        m_thread = std::thread{std::move(body)};
    }

    /// True once stop() began: the loop ends at its next check.
    [[nodiscard]] bool stopping() const noexcept { return m_stopping.load(); }

    /// True on the loop's own thread.
    [[nodiscard]] bool on_loop() const noexcept {
        return m_loop_id.load() == std::this_thread::get_id();
    }

    /// Marks the thread it runs on as the loop's (first thing in the body).
    void entered() noexcept { m_loop_id.store(std::this_thread::get_id()); }

    void stop(const std::function<void()>& wake) noexcept {
        m_stopping.store(true);
        if (wake)
            wake();
        std::thread loop;
        {
            const std::lock_guard lock{m_mutex};
            if (!m_thread.joinable() || m_thread.get_id() == std::this_thread::get_id())
                return;
            loop = std::move(m_thread);
        }
        loop.join();
    }

private:
    std::mutex m_mutex;
    std::thread m_thread;
    std::atomic<bool> m_stopping{false};
    std::atomic<std::thread::id> m_loop_id{};
};

} // namespace pglease::detail
