/// @file call_watchdog.cpp
/// @brief Cancel, then sever, a call past its deadline.
#include "call_watchdog.hpp"

#include <sys/socket.h>

namespace pglease::detail {

call_watchdog::~call_watchdog() {
    {
        const std::lock_guard lock{m_mutex};
        m_stopping = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable())
        m_thread.join();
}

void call_watchdog::arm(time_point deadline, int sock, std::function<void()> cancel) {
    {
        const std::lock_guard lock{m_mutex};
        m_armed = true;
        ++m_generation;
        m_deadline = deadline;
        m_sock = sock;
        m_cancel = std::move(cancel);
        m_done = {};
        if (!m_thread.joinable())
            m_thread = std::thread{[this] { run(); }};
    }
    m_cv.notify_all();
}

call_watchdog::outcome call_watchdog::disarm() noexcept {
    std::unique_lock lock{m_mutex};
    m_armed = false;
    ++m_generation;
    m_cv.notify_all();
    m_cv.wait(lock, [this] { return !m_busy; });
    m_cancel = nullptr;
    m_sock = -1;
    const outcome done = m_done;
    m_done = {};
    return done;
}

void call_watchdog::run() noexcept {
    std::unique_lock lock{m_mutex};
    while (!m_stopping) {
        if (!m_armed) {
            m_cv.wait(lock);
            continue;
        }
        const std::uint64_t generation = m_generation;
        const auto changed = [&] { return m_stopping || m_generation != generation; };
        // 1. Wait for the deadline (or the call to end).
        if (m_cv.wait_until(lock, m_deadline, changed))
            continue;
        // 2. Ask the server to cancel the statement (blocking: it opens a
        //    connection of its own), outside the lock so disarm() can wait.
        m_busy = true;
        const std::function<void()> cancel = m_cancel;
        lock.unlock();
        try {
            if (cancel)
                cancel();
        } catch (...) {
            // Could not reach the server: step 3 ends the call.
        }
        lock.lock();
        m_busy = false;
        m_done.cancelled = true;
        m_cv.notify_all();
        // 3. Still running after the grace period: the cancel did not land.
        //    shutdown(2), not close(2): the descriptor stays the caller's.
        if (m_cv.wait_until(lock, std::chrono::steady_clock::now() + m_grace, changed))
            continue;
        if (m_sock >= 0)
            (void)::shutdown(m_sock, SHUT_RDWR);
        m_done.severed = true;
        // 4. Wait for the call to come back (it fails at once now).
        m_cv.wait(lock, changed);
    }
}

} // namespace pglease::detail
