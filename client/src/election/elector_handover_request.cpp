/// @file elector_handover_request.cpp
/// @brief Rolling deploys between electors (and `pglease run`): asking the
/// holder to hand over (elector_config::request_handover), and answering such a
/// request during a term (answer_handover_requests). The protocol and the
/// sender's role check are handover_listener's.
#include "pglease/elector.hpp"

#include "pglease/internal/handover_request.hpp"

namespace pglease {

void elector::handover_requested(const std::string& requester) {
    {
        const std::lock_guard lock{m_mutex};
        if (!m_accepting_yields || m_yield || !m_election.in_term())
            return;
        // Served by the loop as a yield_to(): the work stops, then
        // lease_handover(); last_handover() has the outcome.
        m_yield.emplace();
        m_yield->successor = requester;
        if (m_source)
            m_source->request_stop();
    }
    m_db->interrupt();
}

clock::time_point elector::ask_for_handover() {
    if (!m_config.request_handover || m_led || m_handover_conninfo.empty() || m_election.in_term())
        return clock::time_point::max();
    const std::string holder = m_election.current().holder();
    if (holder.empty() || holder == m_config.identity)
        return clock::time_point::max();
    if (!m_handover_schedule)
        m_handover_schedule =
            std::make_unique<handover_schedule>(m_config.retry_period, m_config.ttl);
    // The schedule runs on the steady clock; the loop's clock may be a
    // test's, so the wake-up is converted.
    const auto now = std::chrono::steady_clock::now();
    if (m_handover_schedule->due(holder, now)) {
        if (!m_handover_requester)
            m_handover_requester = std::make_unique<handover_requester>(
                m_handover_conninfo, handover_request{m_config.lease_name, m_config.identity});
        std::string error;
        if (m_handover_requester->ask(error))
            m_handover_schedule->asked(holder, now);
        else
            return m_clock.now() + m_config.retry_period; // not sent: wait as usual
    }
    return m_clock.now() + (m_handover_schedule->next() - now);
}

} // namespace pglease
