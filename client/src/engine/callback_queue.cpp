/// @file callback_queue.cpp
/// @brief The callback thread of a lease_set.
#include "engine/callback_queue.hpp"

namespace pglease::detail {

callback_queue::~callback_queue() {
    finish();
}

void callback_queue::start() {
    const std::lock_guard lock{m_mutex};
    if (m_thread.joinable() || m_closed)
        return;
    m_thread = std::thread{[this] { run(); }};
}

void callback_queue::push(std::function<void()> task) {
    {
        const std::lock_guard lock{m_mutex};
        if (m_closed)
            return;
        m_tasks.push_back(std::move(task));
    }
    m_cv.notify_one();
}

void callback_queue::finish() noexcept {
    std::thread worker;
    {
        const std::lock_guard lock{m_mutex};
        m_closed = true;
        worker = std::move(m_thread);
    }
    m_cv.notify_one();
    if (worker.joinable() && worker.get_id() != std::this_thread::get_id())
        worker.join();
}

void callback_queue::run() noexcept {
    std::unique_lock lock{m_mutex};
    for (;;) {
        m_cv.wait(lock, [this] { return m_closed || !m_tasks.empty(); });
        if (m_tasks.empty())
            return; // closed, and everything queued has run
        std::function<void()> task = std::move(m_tasks.front());
        m_tasks.pop_front();
        lock.unlock();
        try {
            task();
        } catch (...) {
            // The application's callback failed; the set goes on.
        }
        lock.lock();
    }
}

} // namespace pglease::detail
