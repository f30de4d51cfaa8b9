/// @file run_signals.hpp
/// @brief `pglease run`'s signal plumbing: a self-pipe that the supervisor's
/// main thread polls, written by the signal handler and by the renew thread.
#pragma once

#include <signal.h>

#include <string>

namespace pglease {
class backend;
}

namespace pglease::cli::run_signals {

/// The byte the renew thread writes to wake the main thread (not a signal).
inline constexpr unsigned char renewer_byte = 0xff;
/// The byte the handover listener writes when a verified request came.
inline constexpr unsigned char handover_byte = 0xfe;

/// Creates the self-pipe and installs the handlers; ignores SIGPIPE.
void install();
/// The pipe's read end (non-blocking): one byte per signal or wake-up.
[[nodiscard]] int read_fd() noexcept;
/// Wakes the main thread from another thread.
void wake_main(unsigned char byte = renewer_byte) noexcept;
/// The last SIGINT/SIGTERM/SIGHUP/SIGQUIT received, or 0.
[[nodiscard]] int shutdown_signal() noexcept;
[[nodiscard]] bool is_shutdown(int sig) noexcept;
/// Whether @p sig is passed on to the job's process group.
[[nodiscard]] bool is_forwarded(int sig) noexcept;
/// "SIGTERM", or "signal N".
[[nodiscard]] std::string name(int sig);
/// In a forked child before exec (async-signal-safe): default dispositions
/// and an empty mask.
void reset_in_child() noexcept;

/// Blocks the handled signals in the calling thread while it lives: a
/// thread started meanwhile inherits the mask and never takes them.
class blocked_in_this_thread {
public:
    blocked_in_this_thread() noexcept;
    ~blocked_in_this_thread();
    blocked_in_this_thread(const blocked_in_this_thread&) = delete;
    blocked_in_this_thread& operator=(const blocked_in_this_thread&) = delete;

private:
    sigset_t m_old{};
};

/// While it lives, a shutdown signal interrupts @p db's blocking wait.
class interrupts_backend {
public:
    explicit interrupts_backend(pglease::backend& db) noexcept;
    ~interrupts_backend();
    interrupts_backend(const interrupts_backend&) = delete;
    interrupts_backend& operator=(const interrupts_backend&) = delete;
};

} // namespace pglease::cli::run_signals
