/// @file call_watchdog.cpp
/// @brief Cancel, then sever, a call past its deadline.
#include "pq/call_watchdog.hpp"

#include <sys/socket.h>

#include <atomic>
#include <memory>

namespace pglease::detail {

using namespace std::chrono_literals;

call_watchdog::~call_watchdog() {
    {
        const std::lock_guard lock{m_mutex};
        m_stopping = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable())
        m_thread.join();
}

void call_watchdog::arm(time_point deadline, int sock, cancel_request cancel,
                        std::function<time_point()> extend) {
    bool wake = false;
    {
        const std::lock_guard lock{m_mutex};
        m_armed = true;
        ++m_generation;
        m_deadline = deadline;
        m_sock = sock;
        m_cancel = std::move(cancel);
        m_extend = std::move(extend);
        m_done = {};
        if (!m_thread.joinable())
            m_thread = std::thread{[this] { run(); }};
        // A thread that waits for this deadline or an earlier one wakes by
        // itself, sees the new call and waits again: no wake-up (and no
        // context switch) per call while the deadline stays put.
        wake = m_waiting_until == time_point::min() || deadline < m_waiting_until;
    }
    if (wake)
        m_cv.notify_all();
}

call_watchdog::outcome call_watchdog::disarm() noexcept {
    std::unique_lock lock{m_mutex};
    m_armed = false;
    ++m_generation;
    // Waiting for the deadline, the thread need not wake now: at the
    // deadline it finds the generation changed and does nothing. Past it
    // (cancelling, severing) it must stop at once.
    if (m_waiting_until == time_point::min())
        m_cv.notify_all();
    // A cancel request in flight usually returns at once: wait for it (at
    // most the grace period), so it cannot land on the connection's next
    // statement. One stuck on a frozen server is left behind: it owns what
    // it uses, and the connection it was for has been shut down.
    if (m_inflight) {
        const auto until = std::chrono::steady_clock::now() + m_grace;
        while (!m_inflight->load() && std::chrono::steady_clock::now() < until)
            m_cv.wait_for(lock, 2ms);
        m_inflight.reset();
    }
    m_cancel.reset(); // a cancel in flight has its own share
    m_extend = nullptr;
    m_sock = -1;
    const outcome done = m_done;
    m_done = {};
    return done;
}

void call_watchdog::run() noexcept {
    std::unique_lock lock{m_mutex};
    while (!m_stopping) {
        if (!m_armed) {
            m_waiting_until = time_point::max();
            m_cv.wait(lock);
            continue;
        }
        const std::uint64_t generation = m_generation;
        const auto changed = [&] { return m_stopping || m_generation != generation; };
        // 1. Wait for the deadline (or the call to end).
        m_waiting_until = m_deadline;
        if (m_cv.wait_until(lock, m_deadline, changed))
            continue;
        //    Unless the deadline moved meanwhile (asked only now, so the
        //    call costs nothing while it stays within the first one).
        if (m_extend) {
            const time_point later = m_extend();
            if (later > m_deadline) {
                m_deadline = later;
                continue;
            }
        }
        m_waiting_until = time_point::min(); // busy with this call: wake me for any change
        // 2. Ask the server to cancel the statement. PQcancel blocks (it
        //    opens a connection of its own and waits for the postmaster to
        //    close it): a SIGSTOPped or frozen server, or a partition, can
        //    keep it there for as long as the server stays frozen (measured:
        //    the whole 15 s pause of a Patroni node) or TCP gives up. So it
        //    runs on a thread of its own, which owns what it uses (see arm()),
        //    and we wait at most the grace period for it to return.
        auto returned = std::make_shared<std::atomic<bool>>(false);
        m_inflight = returned;
        std::thread{[cancel = m_cancel, returned] {
            try {
                if (cancel && *cancel)
                    (*cancel)();
            } catch (...) {
                // Could not reach the server: step 3 ends the call.
            }
            returned->store(true);
        }}.detach();
        m_done.cancelled = true;
        const auto give_up = std::chrono::steady_clock::now() + m_grace;
        while (!returned->load() && std::chrono::steady_clock::now() < give_up) {
            if (m_cv.wait_until(lock, std::min(give_up, std::chrono::steady_clock::now() + 5ms),
                                changed))
                break;
        }
        if (changed())
            continue;
        m_cv.notify_all();
        // The cancel is stuck: the server will not answer either. Sever now.
        if (!returned->load()) {
            if (m_sock >= 0)
                (void)::shutdown(m_sock, SHUT_RDWR);
            m_done.severed = true;
            m_cv.wait(lock, changed);
            continue;
        }
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
