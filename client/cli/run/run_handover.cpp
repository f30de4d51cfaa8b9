/// @file run_handover.cpp
/// @brief `pglease run`'s lease given back: released, or handed over to a
/// verified requester after the job is gone; and asking the holder for it
/// (--take-over) (protocol: pglease/internal/handover_request.hpp).
#include "common/common.hpp"
#include "common/exit_codes.hpp"
#include "run/run_signals.hpp"
#include "run/run_supervisor.hpp"

#include <iostream>

namespace pglease::cli {

// --- the supervisor's steps ---------------------------------------------

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

void supervisor::ask_for_handover() {
    // Ask each new holder at once, and the same one again after the retry
    // period, doubling up to the ttl: a holder that just started may not be
    // listening yet. One that does not understand the request keeps the
    // lease, and we wait as usual.
    const std::string holder = m_lease.holder();
    const auto now = steady::now();
    if (!m_ask.due(holder, now))
        return;
    if (!m_requester)
        m_requester =
            std::make_unique<handover_requester>(plain_conninfo(m_g) + " connect_timeout=2",
                                                 handover_request{m_a.lease, m_lease.identity()});
    std::string error;
    if (!m_requester->ask(error)) {
        info(m_g, "could not send the handover request (waiting as usual): " + error);
        return;
    }
    m_ask.asked(holder, now);
    info(m_g,
         "asked " + holder + " to hand lease \"" + m_a.lease + "\" over to " + m_lease.identity());
}

void supervisor::listen_for_handover_requests() {
    if (m_a.no_handover)
        return;
    try {
        const global_options& g = m_g;
        m_listener = std::make_unique<handover_listener>(
            plain_conninfo(m_g) + " connect_timeout=2", m_a.lease, m_lease.identity(),
            [](const accepted_handover&) { run_signals::wake_main(run_signals::handover_byte); },
            [&g](const std::string& line) { info(g, line); });
    } catch (const std::exception& e) {
        std::cerr << "pglease: warning: handover requests will not be heard: " << e.what()
                  << std::endl;
    }
}

bool supervisor::take_handover_request() {
    if (m_handover || !m_listener)
        return false;
    m_handover = m_listener->take();
    if (!m_handover)
        return false;
    info(m_g, "handover requested by " + m_handover->requester + " (pid " +
                  std::to_string(m_handover->pid) + ", role " + m_handover->role +
                  "): stopping the job, then handing lease \"" + m_a.lease + "\" over");
    return true;
}

int supervisor::finish_handover() {
    const std::string& to = m_handover->requester;
    try {
        if (const auto epoch = m_lease.hand_over(to)) {
            info(m_g, "handed lease \"" + m_a.lease + "\" (epoch " +
                          std::to_string(m_lease.epoch()) + ") over to " + to + " (epoch " +
                          std::to_string(*epoch) + "); exiting 0");
            return exit_ok;
        }
        info(m_g, "lease \"" + m_a.lease + "\" was no longer ours to hand over; exiting 76");
        return exit_lease_lost;
    } catch (const std::exception& e) {
        std::cerr << "pglease: warning: could not hand lease \"" << m_a.lease << "\" over to " << to
                  << " (releasing it instead): " << e.what() << std::endl;
        release_lease(false);
        return exit_error;
    }
}

} // namespace pglease::cli
