/// @file callback_queue.hpp
/// @brief One thread that runs tasks in the order they were queued, so
/// application callbacks never run on (or delay) a thread that renews.
#pragma once

#include "engine/pinned.hpp"
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace pglease::detail {

/// A FIFO of tasks and the thread that runs them. A task that throws is
/// ignored (the application's failure, not ours). Thread-safe.
class callback_queue : pinned { // NOLINT(cppcoreguidelines-special-member-functions)
public:
    callback_queue() = default;

    /// finish().
    ~callback_queue();

    /// Starts the thread (idempotent; no effect after finish()).
    void start();

    /// Queues @p task. Before start() it waits; after finish() it is dropped.
    void push(std::function<void()> task);

    /// Runs every task queued so far, then joins the thread. Idempotent.
    /// Not from a task.
    void finish() noexcept;

private:
    void run() noexcept;

    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<std::function<void()>> m_tasks;
    bool m_closed = false;
    std::thread m_thread;
};

} // namespace pglease::detail
