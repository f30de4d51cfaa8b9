/// @file run_supervisor.cpp
/// @brief `pglease run`, steps 2-6: start the job, renew, supervise, and
/// kill the job's process group before the lease can expire.
#include "run/run_supervisor.hpp"

#include "common/common.hpp"
#include "common/duration.hpp"
#include "common/exit_codes.hpp"
#include "run/run_job.hpp"
#include "run/run_signals.hpp"

#include <pglease/error.hpp>
#include <pglease/internal/identity.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <iostream>

namespace pglease::cli {
namespace {

using std::chrono::milliseconds;

milliseconds ms_between(steady::time_point from, steady::time_point to) {
    return std::chrono::duration_cast<milliseconds>(to - from);
}

} // namespace

pglease::lease_options supervisor::lease_options_for(const run_args& a) {
    pglease::lease_options o;
    o.identity = a.identity.empty() ? pglease::default_identity() : a.identity;
    o.ttl = a.timing.ttl;
    o.safety_margin = a.timing.safety_margin;
    o.retry_period = a.timing.retry;
    o.lock_delay = a.lock_delay;
    return o;
}

steady::time_point supervisor::step_down_at() const noexcept {
    const auto deadline = m_lease.deadline();
    if (deadline == pglease::clock::time_point::min())
        return steady::time_point::min();
    return deadline - m_a.timing.kill_after;
}

int supervisor::start_job() {
    const auto job =
        spawn_job(m_a.command, job_environment(m_a.lease, m_lease.epoch(), m_lease.identity()));
    if (job.pid <= 0) {
        std::cerr << "pglease: error: " << job.error << std::endl;
        return job.exit_code;
    }
    m_child = job.pid;
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
            run_signals::wake_main();
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
                run_signals::wake_main();
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

        // 2. Signals, the renew thread's wake-ups, and verified handover
        //    requests: those stop the job as a lost lease does, then hand over.
        unsigned char buf[64];
        ssize_t n;
        while ((n = ::read(run_signals::read_fd(), buf, sizeof buf)) > 0) {
            for (ssize_t i = 0; i < n; ++i) {
                const int sig = buf[i];
                if (buf[i] == run_signals::handover_byte && !lost && take_handover_request() &&
                    (!m_child_exited || group_alive()))
                    begin_termination(false);
                if (buf[i] == run_signals::renewer_byte || !run_signals::is_forwarded(sig))
                    continue;
                if (run_signals::is_shutdown(sig) && forwarded_shutdown && !killed) {
                    info(m_g, "second " + run_signals::name(sig) +
                                  ": sending SIGKILL to process group " + std::to_string(m_child));
                    signal_group(SIGKILL);
                    killed = true;
                    continue;
                }
                info(m_g, "passing " + run_signals::name(sig) + " to process group " +
                              std::to_string(m_child));
                signal_group(sig);
                if (run_signals::is_shutdown(sig))
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
        if (terminating || m_child_exited) {
            // Non-children leave no SIGCHLD: poll; finer while a successor
            // waits for the group to be gone.
            const milliseconds tick{m_handover ? 2 : 20};
            until = std::min(until, steady::now() + tick);
        }
        const auto wait_ms = std::clamp<long long>(
            std::chrono::ceil<milliseconds>(until - steady::now()).count(), 0, INT_MAX);
        pollfd pfd{run_signals::read_fd(), POLLIN, 0};
        (void)::poll(&pfd, 1, static_cast<int>(wait_ms));
    }

    stop_renewer();
    if (m_handover && !lost)
        return finish_handover(); // the listener goes after: the successor waits
    m_listener.reset();
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
        info(m_g, "job killed by " + run_signals::name(WTERMSIG(m_child_status)));
    }
    release_lease(false);
    return code;
}

int supervisor::run() {
    run_signals::install();
    if (m_a.http) {
        m_http = std::make_unique<run_observability>(
            *m_a.http, m_lease, plain_conninfo(m_g) + " connect_timeout=2", m_g.schema);
        info(m_g, "serving /healthz and /metrics on http://" + m_a.http->host + ":" +
                      std::to_string(m_http->port()));
    }
    for (;;) {
        if (const int rc = acquire_phase(); rc != exit_ok)
            return rc;
        const std::string why = raise_downstreams();
        if (why.empty())
            break;
        // No job before the old leader is shut out of every downstream.
        std::cerr << "pglease: lease \"" << m_a.lease << "\" epoch " << m_lease.epoch() << ": "
                  << why << "; the job does not start" << std::endl;
        release_lease(false);
        if (m_a.no_wait)
            return exit_error;
        // A whole retry period, not until the next NOTIFY (our own release
        // sends one): a downstream that stays down must not spin grants.
        const run_signals::interrupts_backend interruptible{m_db};
        for (const auto again = steady::now() + m_a.timing.retry; steady::now() < again;) {
            if (const int sig = run_signals::shutdown_signal(); sig != 0)
                return 128 + sig;
            (void)m_db.wait_for_change(m_a.lease, again);
        }
    }
    info(m_g, "acquired lease \"" + m_a.lease + "\" as " + m_lease.identity() + ", epoch " +
                  std::to_string(m_lease.epoch()) + " (ttl " + format_duration(m_a.timing.ttl) +
                  "); running: " + quote_command(m_a.command));
    if (const int rc = start_job(); rc != exit_ok) {
        release_lease(false);
        return rc;
    }
    m_requester.reset(); // --take-over: done asking
    {
        // The renew thread must not take our signals (poll, not libpq, handles them).
        const run_signals::blocked_in_this_thread blocked;
        m_renewer = std::thread{[this] { renew_loop(); }};
        // After the job started: a new instance's job should not wait for it.
        listen_for_handover_requests();
    }
    return supervise();
}

} // namespace pglease::cli
