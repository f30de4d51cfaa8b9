/// @file call_watchdog.hpp
/// @brief Internal: ends a database call that runs past its deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace pglease::detail {

/// Watches one blocking call at a time, on a thread of its own (started at
/// the first arm()). No extra round trip when the call returns in time.
///
/// Past the deadline it first sends the server a cancel request (the
/// statement fails with 57014 and the session stays usable), on a thread of
/// its own: a cancel request blocks while the server is frozen or out of
/// reach. If the cancel request has not returned within @p grace, or the
/// call is still running @p grace after it returned (the backend is
/// stopped, the network dropped the request), it shuts the socket down, so
/// the call fails as a broken connection at once: a call never outlives its
/// deadline by more than about twice @p grace.
///
/// @code
///   call_watchdog dog{std::chrono::milliseconds{200}};
///   // once per session: owns what it uses (a weak share of the session)
///   auto cancel = std::make_shared<const std::function<void()>>(...);
///   dog.arm(deadline, conn.sock(), cancel);
///   ... blocking call ...
///   const auto what = dog.disarm();   // what.cancelled, what.severed
/// @endcode
class call_watchdog {
public:
    using time_point = std::chrono::steady_clock::time_point;

    /// What the watchdog did to the call that was just disarmed.
    struct outcome {
        bool cancelled = false; ///< a cancel request was sent
        bool severed = false;   ///< the socket was shut down
    };

    explicit call_watchdog(std::chrono::milliseconds grace) noexcept
        : m_grace{grace} {}
    call_watchdog(const call_watchdog&) = delete;
    call_watchdog& operator=(const call_watchdog&) = delete;
    call_watchdog(call_watchdog&&) = delete;
    call_watchdog& operator=(call_watchdog&&) = delete;
    /// Stops and joins the thread.
    ~call_watchdog();

    /// A cancel request, shared rather than copied: a session keeps one for
    /// all its calls, so arming allocates nothing; the watchdog keeps its
    /// share until disarm(), a cancel in flight its own.
    using cancel_request = std::shared_ptr<const std::function<void()>>;

    /// Watches the call about to start: @p cancel is run (on a thread of
    /// its own) at @p deadline, @p sock shut down when the cancel does not
    /// end the call within @p grace. @p sock stays valid until disarm()
    /// returned; @p cancel must own what it uses (a cancel stuck on a
    /// frozen server may return long after disarm()).
    ///
    /// @p extend, when set, is asked at the deadline (on the watchdog's
    /// thread, until disarm() returned) whether the deadline moved: a later
    /// time point than the current deadline postpones the cancel to it (a
    /// lease renewed meanwhile), anything else lets it go ahead.
    void arm(time_point deadline, int sock, cancel_request cancel,
             std::function<time_point()> extend = {});

    /// Ends the watch. Waits at most the grace period for a cancel request
    /// in flight (one stuck on a frozen server is left behind: it owns what
    /// it uses). Thread-safe.
    outcome disarm() noexcept;

private:
    void run() noexcept;

    const std::chrono::milliseconds m_grace;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_stopping = false;
    bool m_armed = false;
    std::uint64_t m_generation = 0;
    time_point m_deadline{};
    /// What the thread waits for: max() no call, a deadline, min() busy
    /// past one (cancelling or severing).
    time_point m_waiting_until = time_point::min();
    int m_sock = -1;
    cancel_request m_cancel;
    std::function<time_point()> m_extend;
    std::shared_ptr<std::atomic<bool>> m_inflight; ///< set when the last cancel returned
    outcome m_done;
    std::thread m_thread;
};

/// Disarms @p dog when it goes out of scope (exceptions included) and
/// stores what the watchdog did in @p out, for the catch handlers after it.
class watch_guard {
public:
    watch_guard(call_watchdog& dog, call_watchdog::outcome& out) noexcept
        : m_dog{dog}
        , m_out{out} {}
    watch_guard(const watch_guard&) = delete;
    watch_guard& operator=(const watch_guard&) = delete;
    watch_guard(watch_guard&&) = delete;
    watch_guard& operator=(watch_guard&&) = delete;
    ~watch_guard() { m_out = m_dog.disarm(); }

private:
    call_watchdog& m_dog;
    call_watchdog::outcome& m_out;
};

} // namespace pglease::detail
