/// @file cmd_run.cpp
/// @brief `pglease run`: a job under a lease, in its own process group,
/// killed before the lease can expire in store time.
///
/// The supervisor, in numbered steps:
///  1. Acquire: one try with --no-wait (75 when held elsewhere), otherwise
///     wait, woken by NOTIFY pg_lease and by the expiry the server reported.
///     Until a server first answers (none up, or none accepting writes while
///     a failover runs), retry with backoff for --connect-timeout.
///  2. Start the job: fork, setpgid, exec with PGLEASE_* and PGOPTIONS
///     carrying `-c pg_lease.epoch=<epoch>`, so its own libpq writes to
///     fenced tables carry the token without code changes.
///  3. Renew on a thread of its own at ttl/3, retrying every `retry`, and at
///     once on a NOTIFY about the lease (revoke, release, takeover); never
///     renew once the step-down point has passed, and bound every renew by
///     it (a blocked renew is cancelled then: see connection_options).
///  4. Supervise on the main thread: every time it wakes, FIRST compare the
///     monotonic clock with the step-down point (deadline - kill_after), so
///     a process that was SIGSTOPped and continued acts before anything
///     else. Lost (renew refused) or past the step-down point: SIGTERM to
///     the group, SIGKILL after --kill-after (at once if even the local
///     deadline passed), wait for the group to be gone, exit 76.
///  5. SIGINT/SIGTERM/SIGHUP/SIGQUIT are passed to the group (a second one
///     sends SIGKILL); SIGUSR1/SIGUSR2 are passed on.
///  6. When the job exits, leftover processes in its group get SIGTERM (then
///     SIGKILL), the lease is released, and pglease exits with the job's
///     status (128 + signal when a signal killed it).
///
/// The library's lease gives the local deadline: steady time when the last
/// successful acquire/renew was *sent* + ttl - safety margin, always before
/// the server's expiry. The fence is the second line of defence: whatever
/// the job writes after the lease moved on is refused by the database.
#include "commands.hpp"
#include "duration.hpp"
#include "exit_codes.hpp"
#include "run_observability.hpp"

#include <pglease/error.hpp>
#include <pglease/identity.hpp>
#include <pglease/lease.hpp>
#include <pglease/pq_backend.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>

extern char** environ;

namespace pglease::cli {
namespace {

using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

// --- signals: a self-pipe the main thread polls --------------------------

int g_pipe[2] = {-1, -1};
volatile sig_atomic_t g_shutdown_signal = 0;
std::atomic<pglease::backend*> g_waiting_db{nullptr};

constexpr int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
constexpr int handled_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                   SIGUSR1, SIGUSR2, SIGCHLD, SIGCONT};
constexpr unsigned char renewer_byte = 0xff; ///< written by the renew thread, not a signal

bool is_shutdown(int sig) {
    return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

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

void install_signal_handlers() {
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

std::string signal_name(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    return abbrev != nullptr ? std::string{"SIG"} + abbrev : "signal " + std::to_string(sig);
}

std::string quote_command(const std::vector<std::string>& cmd) {
    std::string out;
    for (const auto& arg : cmd) {
        if (!out.empty())
            out += ' ';
        const bool plain =
            !arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
        out += plain ? arg : "'" + arg + "'";
    }
    return out;
}

milliseconds ms_between(steady::time_point from, steady::time_point to) {
    return std::chrono::duration_cast<milliseconds>(to - from);
}

// --- the supervisor ----------------------------------------------------------

class supervisor {
public:
    supervisor(const global_options& g, const run_args& a)
        : m_g{g}
        , m_a{a}
        , m_db{make_connection_options(g, a.timing.call_timeout)}
        , m_lease{m_db, a.lease, lease_options_for(a)} {}
    supervisor(const supervisor&) = delete;
    supervisor& operator=(const supervisor&) = delete;
    supervisor(supervisor&&) = delete;
    supervisor& operator=(supervisor&&) = delete;
    ~supervisor() {
        if (m_child > 0 && !m_child_exited)
            signal_group(SIGKILL); // only on an unexpected exception
        stop_renewer();
    }

    int run();

private:
    static pglease::lease_options lease_options_for(const run_args& a) {
        pglease::lease_options o;
        o.identity = a.identity.empty() ? pglease::default_identity() : a.identity;
        o.ttl = a.timing.ttl;
        o.safety_margin = a.timing.safety_margin;
        o.retry_period = a.timing.retry;
        return o;
    }

    int acquire_phase();
    int start_job();
    int supervise();
    void renew_loop() noexcept;
    void stop_renewer() noexcept;
    [[nodiscard]] steady::time_point step_down_at() const noexcept;
    void signal_group(int sig);
    [[nodiscard]] bool group_alive() const noexcept;
    void reap() noexcept;
    void release_lease(bool quiet_if_lost);
    void held_elsewhere_message(const char* verb);

    const global_options& m_g;
    const run_args& m_a;
    pglease::pq_backend m_db;
    pglease::lease m_lease;

    pid_t m_child = -1;
    int m_child_status = 0;
    bool m_child_exited = false;

    std::thread m_renewer;
    std::atomic<bool> m_stopping{false};
    std::mutex m_mutex;
    std::string m_last_renew_error; ///< guarded by m_mutex
    std::atomic<bool> m_refused{false};
    std::unique_ptr<run_observability> m_http; ///< --http: /healthz and /metrics
};

steady::time_point supervisor::step_down_at() const noexcept {
    const auto deadline = m_lease.deadline();
    if (deadline == pglease::clock::time_point::min())
        return steady::time_point::min();
    return deadline - m_a.timing.kill_after;
}

void supervisor::held_elsewhere_message(const char* verb) {
    std::string msg = "lease \"" + m_a.lease + "\" is held by " +
                      (m_lease.holder().empty() ? std::string{"another holder"} : m_lease.holder());
    if (const auto hint = m_lease.expiry_hint())
        msg += " (expires in " +
               format_duration(std::max(ms_between(steady::now(), *hint), milliseconds{0})) + ")";
    std::cerr << "pglease: " << msg << verb << std::endl;
}

/// Worth retrying before the server first answered: no connection (no
/// server, none accepting writes: libpq's target_session_attrs=read-write
/// says so as a failed connection), a call that timed out, or a server that
/// is starting, stopping, read-only (a standby) or out of connections.
/// Anything else (no pg_lease there, a bad argument) fails at once.
/// @p text on one line: libpq's multi-line messages joined with "; ".
std::string one_line(std::string text) {
    std::string out;
    bool gap = false;
    for (const char c : text) {
        if (c == '\n' || c == '\t' || c == '\r') {
            gap = true;
            continue;
        }
        if (gap && !out.empty())
            out += "; ";
        gap = false;
        out += c;
    }
    return out;
}

bool worth_retrying_until_answered(const pglease::error& e) {
    if (dynamic_cast<const pglease::connection_lost*>(&e) != nullptr)
        return true;
    const std::string& s = e.sqlstate();
    return s.empty() || s.rfind("08", 0) == 0 || s.rfind("57P", 0) == 0 || s == "25006" ||
           s.rfind("53", 0) == 0;
}

int supervisor::acquire_phase() {
    // 1. LISTEN first, so a release between our try and our wait is not missed.
    g_waiting_db.store(&m_db);
    struct unregister {
        ~unregister() { g_waiting_db.store(nullptr); }
    } const guard;
    (void)m_db.listen();
    bool answered = false;
    bool announced = false;
    // Until a server first answers: retry with exponential backoff (from the
    // retry period, doubling, up to 5 s, with jitter) for --connect-timeout
    // in all, so a supervisor (systemd Restart=always) restarting pglease
    // during a failover does not see it exit at once, dozens of times.
    const auto started = steady::now();
    const auto connect_deadline = started + m_a.connect_timeout;
    auto backoff = m_a.timing.retry;
    constexpr milliseconds max_backoff{5000};
    unsigned jitter_state = static_cast<unsigned>(::getpid()) * 2654435761U;
    int failures = 0;
    for (;;) {
        if (g_shutdown_signal != 0)
            return 128 + g_shutdown_signal;
        auto wake = steady::now() + std::chrono::seconds{30};
        try {
            const bool got = m_lease.acquire();
            if (failures > 0 && !answered)
                info(m_g, "connected after " + std::to_string(failures) + " failed attempt" +
                              (failures == 1 ? "" : "s"));
            answered = true;
            if (got)
                return exit_ok;
            if (m_a.no_wait) {
                held_elsewhere_message("");
                return exit_held;
            }
            if (!announced && !m_g.quiet)
                held_elsewhere_message("; waiting");
            announced = true;
            if (const auto hint = m_lease.expiry_hint())
                wake = std::min(wake, std::max(*hint, steady::now() + milliseconds{1}));
        } catch (const pglease::config_error& e) {
            return report_error(e);
        } catch (const pglease::invalid_argument& e) {
            return report_error(e);
        } catch (const pglease::permission_denied& e) {
            return report_error(e);
        } catch (const pglease::error& e) {
            // A lost reply to an acquire is resolved by the next try: the same
            // identity gets the same epoch back while its grant is unexpired.
            if (answered) {
                // Once a server answered, keep waiting through outages (not
                // with --no-wait: one answer was all it asked for).
                if (m_a.no_wait)
                    return report_error(e);
                info(m_g, std::string{"retrying: "} + e.what());
                wake = steady::now() + m_a.timing.retry;
            } else {
                ++failures;
                const auto now = steady::now();
                if (!worth_retrying_until_answered(e) || now >= connect_deadline) {
                    if (failures > 1)
                        info(m_g, "giving up after " + std::to_string(failures) + " attempts in " +
                                      format_duration(ms_between(started, now)) +
                                      " (--connect-timeout " +
                                      format_duration(m_a.connect_timeout) + ")");
                    return report_error(e);
                }
                jitter_state = jitter_state * 1103515245U + 12345U;
                const auto jitter =
                    0.8 + 0.4 * static_cast<double>((jitter_state >> 8) % 1000) / 1000.0;
                auto pause = std::chrono::duration_cast<milliseconds>(backoff * jitter);
                pause = std::min(pause, std::chrono::ceil<milliseconds>(connect_deadline - now));
                info(m_g,
                     "no server accepts the lease yet (" + one_line(e.what()) + "); retrying in " +
                         format_duration(pause) + ", for up to " +
                         format_duration(std::chrono::ceil<milliseconds>(connect_deadline - now)) +
                         " more");
                backoff = std::min(backoff * 2, max_backoff);
                wake = now + pause;
            }
        }
        (void)m_db.wait_for_change(m_a.lease, wake);
    }
}

int supervisor::start_job() {
    // Environment: everything we have, with the lease's variables replaced.
    const std::string epoch = std::to_string(m_lease.epoch());
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view kv{*e};
        if (kv.rfind("PGLEASE_NAME=", 0) == 0 || kv.rfind("PGLEASE_EPOCH=", 0) == 0 ||
            kv.rfind("PGLEASE_HOLDER=", 0) == 0 || kv.rfind("PGOPTIONS=", 0) == 0)
            continue;
        env.emplace_back(kv);
    }
    const char* old_options = std::getenv("PGOPTIONS");
    std::string options = old_options != nullptr ? old_options : "";
    if (!options.empty())
        options += ' ';
    options += "-c pg_lease.epoch=" + epoch;
    env.push_back("PGOPTIONS=" + options);
    env.push_back("PGLEASE_NAME=" + m_a.lease);
    env.push_back("PGLEASE_EPOCH=" + epoch);
    env.push_back("PGLEASE_HOLDER=" + m_lease.identity());

    std::vector<char*> envp;
    for (auto& s : env)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = m_a.command;
    std::vector<char*> argv;
    for (auto& s : args)
        argv.push_back(s.data());
    argv.push_back(nullptr);

    // Orphaned grandchildren come back to us, so we can reap them and see
    // the group die.
    (void)::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

    int exec_pipe[2];
    if (::pipe2(exec_pipe, O_CLOEXEC) != 0)
        return report_error(std::string{"pipe2: "} + std::strerror(errno));
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int err = errno;
        ::close(exec_pipe[0]);
        ::close(exec_pipe[1]);
        return report_error(std::string{"fork: "} + std::strerror(err));
    }
    if (pid == 0) {
        // The child: async-signal-safe calls only, until exec.
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); // pglease SIGKILLed: the job dies too
        if (::getppid() != parent)
            ::_exit(127);
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        for (const int sig : handled_signals)
            ::sigaction(sig, &dfl, nullptr);
        ::sigaction(SIGPIPE, &dfl, nullptr);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execvpe(argv[0], argv.data(), envp.data());
        const int err = errno;
        [[maybe_unused]] const auto n = ::write(exec_pipe[1], &err, sizeof err);
        ::_exit(err == ENOENT ? 127 : 126);
    }
    ::setpgid(pid, pid); // also here: no race with signal_group()
    m_child = pid;
    ::close(exec_pipe[1]);
    int err = 0;
    ssize_t n;
    do
        n = ::read(exec_pipe[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    ::close(exec_pipe[0]);
    if (n == static_cast<ssize_t>(sizeof err)) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        m_child = -1;
        std::cerr << "pglease: error: cannot run " << m_a.command[0] << ": " << std::strerror(err)
                  << std::endl;
        return err == ENOENT ? 127 : 126;
    }
    return exit_ok;
}

void supervisor::renew_loop() noexcept {
    auto next = m_lease.renewed_at() + m_a.timing.renew_every;
    while (!m_stopping.load()) {
        // Sleep until the renewal is due, or until an event about our lease
        // (a revoke, a release, a takeover) arrives: then renew at once, so
        // a revoked lease is noticed in milliseconds, not at the next renewal.
        const bool event = m_db.wait_for_change(m_a.lease, next);
        if (m_stopping.load())
            break;
        if (!event && steady::now() < next)
            continue; // interrupted without cause
        // Never renew past the step-down point: the supervisor is killing
        // the job (or is about to, if it was paused together with us).
        const auto now = steady::now();
        if (!m_lease.held() || now >= step_down_at()) {
            const unsigned char b = renewer_byte;
            [[maybe_unused]] const auto n = ::write(g_pipe[1], &b, 1);
            return;
        }
        const auto sent = steady::now();
        try {
            // Bounded by the step-down point: a renew blocked on the server
            // is cancelled then, and the supervisor starts the kill on time.
            const bool renewed = m_lease.renew(step_down_at());
            if (m_http)
                m_http->renew_done(steady::now() - sent, renewed);
            if (!renewed) {
                m_refused.store(true);
                const unsigned char b = renewer_byte;
                [[maybe_unused]] const auto n = ::write(g_pipe[1], &b, 1);
                return;
            }
            next = m_lease.renewed_at() + m_a.timing.renew_every;
            const std::lock_guard lock{m_mutex};
            m_last_renew_error.clear();
        } catch (const std::exception& e) {
            if (m_http)
                m_http->renew_done(steady::now() - sent, false);
            next = steady::now() + m_a.timing.retry;
            const std::lock_guard lock{m_mutex};
            m_last_renew_error = e.what();
        }
    }
}

void supervisor::stop_renewer() noexcept {
    m_stopping.store(true);
    m_db.interrupt();
    if (m_renewer.joinable())
        m_renewer.join();
}

void supervisor::signal_group(int sig) {
    if (m_child > 0)
        (void)::kill(-m_child, sig);
}

bool supervisor::group_alive() const noexcept {
    return m_child > 0 && (::kill(-m_child, 0) == 0 || errno != ESRCH);
}

void supervisor::reap() noexcept {
    for (;;) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            return;
        if (pid == m_child) {
            m_child_exited = true;
            m_child_status = status;
        }
    }
}

void supervisor::release_lease(bool quiet_if_lost) {
    try {
        if (m_lease.release())
            info(m_g, "released lease \"" + m_a.lease + "\" (epoch " +
                          std::to_string(m_lease.epoch()) + ")");
        else if (!quiet_if_lost)
            info(m_g, "lease \"" + m_a.lease + "\" was no longer ours to release");
    } catch (const std::exception& e) {
        std::cerr << "pglease: warning: could not release lease \"" << m_a.lease
                  << "\" (it expires by itself): " << e.what() << std::endl;
    }
}

int supervisor::supervise() {
    const auto& t = m_a.timing;
    bool lost = false;
    bool terminating = false; // SIGTERM sent to the group, SIGKILL due at kill_at
    bool killed = false;      // SIGKILL sent
    bool forwarded_shutdown = false;
    steady::time_point kill_at = steady::time_point::max();

    const auto begin_termination = [&](bool immediate_kill) {
        if (immediate_kill || t.kill_after.count() == 0) {
            info(m_g, "sending SIGKILL to process group " + std::to_string(m_child));
            signal_group(SIGKILL);
            killed = true;
        } else if (!terminating) {
            info(m_g, "sending SIGTERM to process group " + std::to_string(m_child) +
                          ", SIGKILL in " + format_duration(t.kill_after));
            signal_group(SIGTERM);
        }
        if (!terminating) {
            terminating = true;
            kill_at = steady::now() + t.kill_after;
        }
    };

    for (;;) {
        // 1. The clock first, before anything else: after a SIGSTOP this is
        //    where we learn that the lease may already be gone.
        const auto now = steady::now();
        if (!lost) {
            const bool refused = m_refused.load();
            const auto step_down = step_down_at();
            if (refused || now >= step_down) {
                const auto deadline = m_lease.deadline();
                const bool past_deadline =
                    deadline == pglease::clock::time_point::min() || now >= deadline;
                m_lease.mark_lost(); // no renewal can revive it for us any more
                lost = true;
                std::string why;
                if (refused) {
                    why = "the server refused the renewal (released, revoked, or expired and taken "
                          "over)";
                } else {
                    const auto last = m_lease.renewed_at();
                    why = "it could expire before another renewal succeeds: last successful "
                          "renewal sent " +
                          format_duration(ms_between(last, now)) + " ago, ttl " +
                          format_duration(t.ttl);
                    std::lock_guard lock{m_mutex};
                    if (!m_last_renew_error.empty())
                        why += "; last renew error: " + m_last_renew_error;
                }
                info(m_g, "lost lease \"" + m_a.lease + "\" (epoch " +
                              std::to_string(m_lease.epoch()) + "): " + why);
                if (!refused && past_deadline)
                    info(m_g, "the local deadline passed " +
                                  format_duration(ms_between(deadline, now)) +
                                  " ago (was this process paused?): no grace period left");
                if (!m_child_exited || group_alive())
                    begin_termination(!refused && past_deadline);
            }
        }

        // 2. Signals, and the renew thread's wake-ups.
        unsigned char buf[64];
        ssize_t n;
        while ((n = ::read(g_pipe[0], buf, sizeof buf)) > 0) {
            for (ssize_t i = 0; i < n; ++i) {
                const int sig = buf[i];
                if (buf[i] == renewer_byte ||
                    std::find(std::begin(forwarded_signals), std::end(forwarded_signals), sig) ==
                        std::end(forwarded_signals))
                    continue;
                if (is_shutdown(sig) && forwarded_shutdown && !killed) {
                    info(m_g, "second " + signal_name(sig) + ": sending SIGKILL to process group " +
                                  std::to_string(m_child));
                    signal_group(SIGKILL);
                    killed = true;
                    continue;
                }
                info(m_g, "passing " + signal_name(sig) + " to process group " +
                              std::to_string(m_child));
                signal_group(sig);
                if (is_shutdown(sig))
                    forwarded_shutdown = true;
            }
        }

        // 3. Reap the job and any orphans handed to us.
        reap();

        // 4. Escalate.
        if (terminating && !killed && steady::now() >= kill_at) {
            info(m_g, "process group " + std::to_string(m_child) + " still alive after " +
                          format_duration(t.kill_after) + ": sending SIGKILL");
            signal_group(SIGKILL);
            killed = true;
        }

        // 5. The job is done; leftovers in its group go too.
        if (m_child_exited) {
            if (!group_alive())
                break;
            if (!terminating) {
                info(m_g, "the job exited but processes remain in its group");
                begin_termination(false);
            }
        }

        // 6. Sleep until the next thing that can be due.
        auto until = steady::now() + std::chrono::seconds{60};
        if (!lost)
            until = std::min(until, std::max(step_down_at(), steady::now()));
        if (terminating && !killed)
            until = std::min(until, kill_at);
        if (terminating || m_child_exited)
            until =
                std::min(until, steady::now() + milliseconds{20}); // non-children leave no SIGCHLD
        const auto wait_ms = std::clamp<long long>(
            std::chrono::ceil<milliseconds>(until - steady::now()).count(), 0, INT_MAX);
        pollfd pfd{g_pipe[0], POLLIN, 0};
        (void)::poll(&pfd, 1, static_cast<int>(wait_ms));
    }

    stop_renewer();
    if (lost) {
        if (!m_refused.load())
            release_lease(true); // hand over at once if the server still had it as ours
        info(m_g, "job stopped; exiting 76 (lease lost)");
        return exit_lease_lost;
    }
    int code = exit_error;
    if (WIFEXITED(m_child_status)) {
        code = WEXITSTATUS(m_child_status);
        info(m_g, "job exited with status " + std::to_string(code));
    } else if (WIFSIGNALED(m_child_status)) {
        code = 128 + WTERMSIG(m_child_status);
        info(m_g, "job killed by " + signal_name(WTERMSIG(m_child_status)));
    }
    release_lease(false);
    return code;
}

int supervisor::run() {
    install_signal_handlers();
    if (m_a.http) {
        m_http = std::make_unique<run_observability>(
            *m_a.http, m_lease, plain_conninfo(m_g) + " connect_timeout=2", m_g.schema);
        info(m_g, "serving /healthz and /metrics on http://" + m_a.http->host + ":" +
                      std::to_string(m_http->port()));
    }
    if (const int rc = acquire_phase(); rc != exit_ok)
        return rc;
    info(m_g, "acquired lease \"" + m_a.lease + "\" as " + m_lease.identity() + ", epoch " +
                  std::to_string(m_lease.epoch()) + " (ttl " + format_duration(m_a.timing.ttl) +
                  "); running: " + quote_command(m_a.command));
    if (const int rc = start_job(); rc != exit_ok) {
        release_lease(false);
        return rc;
    }
    // The renew thread must not take our signals (poll, not libpq, handles them).
    sigset_t block, old;
    sigemptyset(&block);
    for (const int sig : handled_signals)
        sigaddset(&block, sig);
    ::pthread_sigmask(SIG_BLOCK, &block, &old);
    m_renewer = std::thread{[this] { renew_loop(); }};
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return supervise();
}

} // namespace

int cmd_run(const global_options& g, const run_args& a) {
    try {
        supervisor s{g, a};
        return s.run();
    } catch (const std::exception& e) {
        return report_error(e);
    }
}

} // namespace pglease::cli
