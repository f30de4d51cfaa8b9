/// @file elector_term.cpp
/// @brief The elector's terms: a term's worker thread and stop token begun
/// and ended, and the election's events turned into them and into the
/// callbacks (the floor under the elector's thread and its handovers).
#include "pglease/elector.hpp"

#include "engine/call_observer.hpp"
#include "engine/loop_thread.hpp"
#include "pglease/internal/handover_request.hpp"

namespace pglease {

void elector::start_term(std::int64_t epoch) {
    join_worker(); // the previous term's work returned (it was told to stop)
    stop_token token;
    {
        const std::lock_guard lock{m_mutex};
        m_source.emplace(m_clock);
        m_source->set_deadline(m_election.current().deadline());
        token = m_source->token();
        if (m_loop->stopping())
            m_source->request_stop();
    }
    m_led = true;
    m_worker = std::thread{[this, epoch, token] {
        m_worker_id.store(std::this_thread::get_id()); // yield_to() refuses this thread
        try {
            m_config.callbacks.on_started_leading(epoch, token);
        } catch (...) {
            // Leader work failed: resign rather than lead without it.
            m_work_failed.store(true);
            m_db->interrupt();
        }
    }};
    // After the work has started: neither is on its path.
    m_handover_requester.reset(); // asked for the first term only
    if (m_config.answer_handover_requests && !m_handover_conninfo.empty()) {
        try {
            m_handover_listener = std::make_unique<handover_listener>(
                m_handover_conninfo, m_config.lease_name, m_config.identity,
                [this](const accepted_handover& a) { handover_requested(a.requester); }, nullptr);
        } catch (const std::exception&) {
            // No pipe: requests go unheard this term, as when its session
            // fails; the lease and the work are unaffected.
        }
    }
}

void elector::end_term() {
    m_handover_listener.reset(); // returns at once; no request is served after this
    {
        const std::lock_guard lock{m_mutex};
        if (m_source)
            m_source->request_stop();
    }
    detail::call_observer(m_config.callbacks.on_stopped_leading);
}

void elector::join_worker() noexcept {
    if (m_worker.joinable())
        m_worker.join();
}

void elector::dispatch(const std::vector<election_event>& events) {
    for (const election_event& e : events) {
        switch (e.what) {
        case election_event::kind::started_leading:
            start_term(e.epoch);
            break;
        case election_event::kind::stopped_leading:
            end_term();
            break;
        case election_event::kind::term_refused:
            detail::call_observer(m_config.callbacks.on_term_refused, e.epoch, e.why);
            break;
        case election_event::kind::new_leader:
            detail::call_observer(m_config.callbacks.on_new_leader, e.identity);
            break;
        }
    }
}

} // namespace pglease
