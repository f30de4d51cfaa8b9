/// @file run_acquire.cpp
/// @brief `pglease run`, step 1: acquire the lease, or wait for it, woken by
/// NOTIFY pg_lease and by the expiry the server reported; until a server
/// first answers, retry with backoff for --connect-timeout.
#include "common/common.hpp"
#include "common/duration.hpp"
#include "common/exit_codes.hpp"
#include "run/run_signals.hpp"
#include "run/run_supervisor.hpp"

#include <pglease/error.hpp>

#include <unistd.h>

#include <algorithm>
#include <iostream>

namespace pglease::cli {
namespace {

using std::chrono::milliseconds;

milliseconds ms_between(steady::time_point from, steady::time_point to) {
    return std::chrono::duration_cast<milliseconds>(to - from);
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

} // namespace

void supervisor::held_elsewhere_message(const char* verb) {
    std::string msg = "lease \"" + m_a.lease + "\" is held by " +
                      (m_lease.holder().empty() ? std::string{"another holder"} : m_lease.holder());
    if (const auto hint = m_lease.expiry_hint())
        msg += " (expires in " +
               format_duration(std::max(ms_between(steady::now(), *hint), milliseconds{0})) + ")";
    std::cerr << "pglease: " << msg << verb << std::endl;
}

int supervisor::acquire_phase() {
    // 1. LISTEN first, so a release between our try and our wait is not missed.
    const run_signals::interrupts_backend interruptible{m_db};
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
        if (const int sig = run_signals::shutdown_signal(); sig != 0)
            return 128 + sig;
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
            if (m_a.request_handover) {
                ask_for_handover();
                wake = std::min(wake, m_ask.next()); // try (and ask) again on the backoff
            }
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

} // namespace pglease::cli
