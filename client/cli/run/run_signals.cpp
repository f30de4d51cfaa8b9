/// @file run_signals.cpp
/// @brief The self-pipe and the handlers of `pglease run`.
#include "run/run_signals.hpp"

#include <pglease/backend.hpp>
#include <pglease/error.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>

namespace pglease::cli::run_signals {
namespace {

int g_pipe[2] = {-1, -1};
volatile sig_atomic_t g_shutdown_signal = 0;
std::atomic<pglease::backend*> g_waiting_db{nullptr};

constexpr int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
constexpr int handled_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                   SIGUSR1, SIGUSR2, SIGCHLD, SIGCONT};

void on_signal(int sig) {
    const int saved = errno;
    const auto byte = static_cast<unsigned char>(sig);
    [[maybe_unused]] const auto n = ::write(g_pipe[1], &byte, 1);
    if (is_shutdown(sig)) {
        g_shutdown_signal = sig;
        if (auto* db = g_waiting_db.load())
            db->interrupt(); // a write(2) to the backend's self-pipe
    }
    errno = saved;
}

} // namespace

void install() {
    if (::pipe2(g_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        throw pglease::error{std::string{"pipe2: "} + std::strerror(errno)};
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (const int sig : handled_signals)
        ::sigaction(sig, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
}

int read_fd() noexcept {
    return g_pipe[0];
}

void wake_main(unsigned char byte) noexcept {
    [[maybe_unused]] const auto n = ::write(g_pipe[1], &byte, 1);
}

int shutdown_signal() noexcept {
    return g_shutdown_signal;
}

bool is_shutdown(int sig) noexcept {
    return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

bool is_forwarded(int sig) noexcept {
    return std::find(std::begin(forwarded_signals), std::end(forwarded_signals), sig) !=
           std::end(forwarded_signals);
}

std::string name(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    return abbrev != nullptr ? std::string{"SIG"} + abbrev : "signal " + std::to_string(sig);
}

void reset_in_child() noexcept {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (const int sig : handled_signals)
        ::sigaction(sig, &dfl, nullptr);
    ::sigaction(SIGPIPE, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

blocked_in_this_thread::blocked_in_this_thread() noexcept {
    sigset_t block;
    sigemptyset(&block);
    for (const int sig : handled_signals)
        sigaddset(&block, sig);
    ::pthread_sigmask(SIG_BLOCK, &block, &m_old);
}

blocked_in_this_thread::~blocked_in_this_thread() {
    ::pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
}

interrupts_backend::interrupts_backend(pglease::backend& db) noexcept {
    g_waiting_db.store(&db);
}

interrupts_backend::~interrupts_backend() {
    g_waiting_db.store(nullptr);
}

} // namespace pglease::cli::run_signals
