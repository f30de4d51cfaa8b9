/// @file wakeup_pipe.hpp
/// @brief Internal: a self-pipe that lets another thread wake a poll(2).
#pragma once

namespace pglease::detail {

/// A non-blocking pipe: signal() from any thread makes read_fd() readable
/// until drain(). Owns both descriptors.
class wakeup_pipe {
public:
    wakeup_pipe();
    ~wakeup_pipe();
    wakeup_pipe(const wakeup_pipe&) = delete;
    wakeup_pipe& operator=(const wakeup_pipe&) = delete;
    wakeup_pipe(wakeup_pipe&&) = delete;
    wakeup_pipe& operator=(wakeup_pipe&&) = delete;

    /// The descriptor to poll for POLLIN.
    [[nodiscard]] int read_fd() const noexcept { return m_fds[0]; }
    /// Makes read_fd() readable. Async-signal-safe and thread-safe.
    void signal() noexcept;
    /// Empties the pipe.
    void drain() noexcept;

private:
    int m_fds[2] = {-1, -1};
};

} // namespace pglease::detail
