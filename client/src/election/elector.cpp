/// @file elector.cpp
/// @brief The elector's thread: step, dispatch, wait for NOTIFY or the
/// next due time (a term's worker thread: elector_term.cpp).
///
/// election/: one lease, one leader. election (the single-threaded state
/// machine, stepped by tests over the test double), elector (its thread and
/// the term's worker), planned handover (yield_to, preferred successor) and
/// handover requests between instances, the downstream raises a term
/// starts with, and scoped_lease for a lease held over a scope.
#include "pglease/elector.hpp"

#include "engine/call_observer.hpp"
#include "engine/loop_thread.hpp"
#include "engine/validated_config.hpp"
#include "pglease/error.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/downstream.hpp"
#include "pglease/internal/handover_request.hpp"
#include "pq/conninfo.hpp"

#include <algorithm>
#include <random>

namespace pglease {
elector::elector(elector_config config)
    : elector{std::move(config), nullptr, system_clock()} {}

namespace {

std::vector<backend*> pointers(const std::vector<std::unique_ptr<backend>>& backends) {
    std::vector<backend*> out;
    out.reserve(backends.size());
    for (const auto& b : backends)
        out.push_back(b.get());
    return out;
}

} // namespace

elector::elector(elector_config config, std::unique_ptr<backend> db, const clock& clk)
    : elector{config, std::move(db), clk, downstream_backends(config.downstreams)} {}

elector::elector(elector_config config, std::unique_ptr<backend> db, const clock& clk,
                 std::vector<std::unique_ptr<backend>> downstreams)
    : m_config{detail::validated(std::move(config))}
    , m_clock{clk}
    , m_handover_conninfo{db ? std::string{} : detail::build_conninfo(m_config.connection)}
    , m_db{db ? std::move(db) : std::make_unique<pq_backend>(m_config.connection)}
    , m_downstreams{std::move(downstreams)}
    , m_election{*m_db, m_config, m_clock, std::random_device{}(), pointers(m_downstreams)}
    , m_loop{std::make_unique<detail::loop_thread>()} {
    if (m_downstreams.size() != m_config.downstreams.size())
        throw config_error{"elector: one backend per downstream is needed"};
}

void elector::start() {
    m_loop->start(
        [this] {
            const std::lock_guard lock{m_mutex};
            m_accepting_yields = true;
        },
        [this] { run(); });
}

elector::~elector() {
    stop();
}

void elector::stop() noexcept {
    // From the elector's own thread (a callback) this only asks: the
    // owner's destructor joins.
    m_loop->stop([this] {
        {
            // Tell leader work first, so it can wind down while we wake the loop.
            const std::lock_guard lock{m_mutex};
            if (m_source)
                m_source->request_stop();
        }
        m_db->interrupt();
    });
}

fence_token elector::token() const {
    if (!m_election.leading())
        throw lease_lost{"not leading lease \"" + m_config.lease_name + "\""};
    return m_election.current().token();
}

void elector::report_lost(std::int64_t epoch) noexcept {
    if (m_election.current().epoch() != epoch)
        return;
    m_election.current().mark_lost();
    {
        const std::lock_guard lock{m_mutex};
        if (m_source)
            m_source->request_stop();
    }
    m_db->interrupt(); // the loop ends the term and calls on_stopped_leading
}

void elector::run() noexcept {
    m_loop->entered();
    (void)m_db->listen();
    while (!m_loop->stopping()) {
        try {
            serve_yield();
            if (m_work_failed.exchange(false)) {
                // Leader work failed: resign now, campaign again after a
                // retry period (not at once, or a crashing job would spin).
                dispatch(m_election.resign(true));
            } else {
                if (!m_election.in_term())
                    join_worker(); // no new term while old work still runs
                dispatch(m_election.step());
            }
            if (m_election.in_term()) {
                const std::lock_guard lock{m_mutex};
                if (m_source)
                    m_source->set_deadline(m_election.current().deadline());
            }
        } catch (const std::exception&) {
            // Not expected (step() handles backend errors): keep campaigning,
            // but not in a tight loop.
            (void)m_db->wait_for_change(m_config.lease_name, m_clock.now() + m_config.retry_period);
            continue;
        }
        if (m_loop->stopping())
            break;
        auto wake = std::min(m_election.next_step(), ask_for_handover());
        if (m_election.in_term())
            wake = std::min(wake, m_election.current().deadline());
        (void)m_db->wait_for_change(m_config.lease_name, wake);
    }

    // Stopping: a yield_to() that came meanwhile is served; no later one is
    // taken (it answers not_leading).
    {
        const std::lock_guard lock{m_mutex};
        m_accepting_yields = false;
    }
    serve_yield();

    // Stopping: end the term, let the work return, then hand over to the
    // preferred successor, or release, and report.
    try {
        if (m_election.in_term() && !m_config.preferred_successor.empty()) {
            (void)hand_over(m_config.preferred_successor, m_config.release_on_stop);
        } else if (m_election.in_term()) {
            {
                const std::lock_guard lock{m_mutex};
                if (m_source)
                    m_source->request_stop();
            }
            join_worker();
            dispatch(m_election.resign(m_config.release_on_stop));
        }
    } catch (const std::exception&) {
    }
    join_worker();
}

} // namespace pglease
