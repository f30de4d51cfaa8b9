/// @file stop_token.cpp
/// @brief stop_token / stop_source over a shared mutex + condition variable.
#include "pglease/internal/stop_token.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

namespace pglease {
namespace detail {

struct stop_state {
    explicit stop_state(const clock& c)
        : clk{c} {}

    [[nodiscard]] bool stopped() const noexcept {
        return requested.load() || clk.now().time_since_epoch().count() >= deadline.load();
    }

    const clock& clk;
    std::atomic<bool> requested{false};
    std::atomic<clock::duration::rep> deadline{std::numeric_limits<clock::duration::rep>::max()};
    std::mutex mutex;
    std::condition_variable cv;
};

} // namespace detail

bool stop_token::stop_requested() const noexcept {
    return m_state && m_state->stopped();
}

bool stop_token::wait_for(std::chrono::nanoseconds timeout) const {
    const clock& clk = m_state ? m_state->clk : system_clock();
    return wait_until(clk.now() + std::chrono::duration_cast<clock::duration>(timeout));
}

bool stop_token::wait_until(clock::time_point until) const {
    if (!m_state) {
        std::this_thread::sleep_until(to_steady(system_clock(), until));
        return false;
    }
    detail::stop_state& s = *m_state;
    std::unique_lock lock{s.mutex};
    for (;;) {
        if (s.stopped())
            return true;
        const auto now = s.clk.now();
        if (now >= until)
            return false;
        // Wake at whichever comes first; a renewal may have moved the
        // deadline meanwhile, so the loop re-reads it.
        const clock::time_point deadline{clock::duration{s.deadline.load()}};
        const auto wake = std::min(until, deadline);
        s.cv.wait_until(lock, to_steady(s.clk, wake));
    }
}

void stop_token::wait() const {
    (void)wait_until(clock::time_point::max());
}

stop_source::stop_source(const clock& clk)
    : m_state{std::make_shared<detail::stop_state>(clk)} {}

void stop_source::request_stop() noexcept {
    {
        const std::lock_guard lock{m_state->mutex};
        m_state->requested.store(true);
    }
    m_state->cv.notify_all();
}

void stop_source::set_deadline(clock::time_point deadline) noexcept {
    m_state->deadline.store(deadline.time_since_epoch().count());
    m_state->cv.notify_all();
}

} // namespace pglease
