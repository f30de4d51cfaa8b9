/// @file elector_handover.cpp
/// @brief Planned handover to a chosen successor: elector::yield_to() and
/// the preferred successor on stop. The work stops before the server hears
/// of it, so a successor never leads while this term's work still runs.
#include "pglease/elector.hpp"

#include "engine/loop_thread.hpp"
#include "pglease/error.hpp"
#include "pglease/internal/handover_request.hpp"

namespace pglease {

handover_result elector::yield_to(const std::string& successor) {
    if (successor.empty() || successor.size() > 255)
        throw config_error{"successor identity must be 1..255 bytes"};
    if (successor == m_config.identity)
        throw config_error{"cannot yield to the elector's own identity"};
    const auto self = std::this_thread::get_id();
    if (m_loop->on_loop() || self == m_worker_id.load())
        throw error{"yield_to() must not be called from an elector callback (it would wait "
                    "for that callback to return)"};

    std::future<handover_result> done;
    {
        const std::lock_guard lock{m_mutex};
        if (!m_accepting_yields) {
            handover_result r;
            r.successor = successor;
            r.message = "the elector is not running";
            return r;
        }
        if (m_yield)
            throw error{"another yield_to() is in progress"};
        m_yield.emplace();
        m_yield->successor = successor;
        done = m_yield->done.get_future();
        // Tell the work at once, as stop() does, so it winds down while the
        // elector's thread wakes up.
        if (m_source && m_election.in_term())
            m_source->request_stop();
    }
    m_db->interrupt();
    return done.get();
}

std::optional<handover_result> elector::last_handover() const {
    const std::lock_guard lock{m_mutex};
    return m_last_handover;
}

void elector::serve_yield() {
    std::optional<yield_request> request;
    {
        const std::lock_guard lock{m_mutex};
        if (!m_yield)
            return;
        request.swap(m_yield);
    }
    try {
        request->done.set_value(hand_over(request->successor, true));
    } catch (...) {
        request->done.set_exception(std::current_exception());
    }
}

handover_result elector::hand_over(const std::string& successor, bool release_on_failure) {
    handover_result r;
    r.successor = successor;
    if (!m_election.in_term()) {
        r.message = "not leading lease \"" + m_config.lease_name + "\"";
        return r;
    }
    r.old_epoch = m_election.current().epoch();

    // 1. The work stops first: signal the term's token and wait for
    //    on_started_leading to return.
    {
        const std::lock_guard lock{m_mutex};
        if (m_source)
            m_source->request_stop();
    }
    join_worker();

    // 2. The term ends here, with no I/O (the lease is marked lost), and
    //    on_stopped_leading returns before the server hears of the handover.
    //    The handover listener's session closes after lease_handover: its
    //    backend's exit would share the server's CPU with it (requests that
    //    come meanwhile are ignored: the term has ended).
    std::unique_ptr<handover_listener> retiring = std::move(m_handover_listener);
    dispatch(m_election.resign(false));

    // 3. lease_handover commits: the successor holds the lease with a new
    //    epoch, this epoch's writes are refused, and NOTIFY pg_lease wakes
    //    the successor's elector, which acquires it (same epoch) at once.
    lease& l = m_election.current();
    try {
        if (const auto epoch = l.hand_over(successor)) {
            r.what = handover_result::outcome::handed_over;
            r.new_epoch = *epoch;
        } else {
            r.what = handover_result::outcome::not_ours;
            r.message = "lease \"" + m_config.lease_name + "\" epoch " +
                        std::to_string(r.old_epoch) +
                        " was no longer the unexpired grant of record (lost, expired, revoked or "
                        "taken over): nothing handed over";
        }
    } catch (const std::exception& e) {
        // 4. Outcome unknown. Release, so the lease does not sit with nobody
        //    until its ttl if the handover did not commit (if it did, the
        //    release finds nothing).
        r.what = handover_result::outcome::failed;
        r.message = e.what();
        if (release_on_failure) {
            try {
                (void)m_db->release(m_config.lease_name, m_config.identity, r.old_epoch);
            } catch (const std::exception&) {
                // It expires on its own.
            }
        }
    }
    retiring.reset();
    const std::lock_guard lock{m_mutex};
    m_last_handover = r;
    return r;
}

} // namespace pglease
