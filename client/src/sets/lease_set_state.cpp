/// @file lease_set_state.cpp
/// @brief A lease set's step, as numbered steps: one renew, one release and
/// one acquire round trip at most, whatever the number of leases.
#include "sets/lease_set_state.hpp"

#include "engine/renew_round.hpp"
#include "pglease/error.hpp"

#include <algorithm>
#include <utility>

namespace pglease {

using detail::expiry_slack;
using detail::term_end;

/// This holder's name for each way a term ends (term_end's order).
constexpr detail::term_end_names<lease_loss> loss_by_end{
    lease_loss::lost, lease_loss::renew_deadline, lease_loss::removed, lease_loss::stopped,
    lease_loss::failed};

lease_set_state::lease_set_state(backend& db, const lease_set_config& config, const clock& clk,
                                 std::uint64_t seed)
    : m_config{config}
    , m_db{db}
    , m_clock{clk}
    , m_rng{seed}
    , m_terms{db, clk, m_config}
    , m_next{clk.now()}
    , m_next_acquire{clk.now()} {
    for (const std::string& name : m_config.names)
        add(name);
}

void lease_set_state::add(const std::string& name) {
    validate_lease_name(name);
    if (m_wanted.insert(name).second && !m_stopping) {
        m_next_acquire = std::min(m_next_acquire, m_clock.now());
        m_next = m_clock.now();
    }
}

bool lease_set_state::acquirable(const std::string& name) const {
    return m_wanted.count(name) > 0 && !m_terms.has(name) && !m_terms.resting(name);
}

void lease_set_state::lease_freed(const std::vector<std::string>& names) {
    if (m_stopping)
        return;
    if (names.empty())
        m_next_acquire = m_clock.now(); // which is unknown: try every one
    for (const std::string& name : names)
        if (acquirable(name))
            m_freed.insert(name);
    m_next = m_clock.now();
}

void lease_set_state::remove(const std::string& name) {
    // The term ends at the next step (step 1), which also releases it.
    m_held_elsewhere.erase(name);
    if (m_wanted.erase(name) > 0)
        m_next = m_clock.now();
}

void lease_set_state::work_failed(const std::string& name, std::int64_t epoch) {
    m_terms.work_failed(name, epoch);
    m_next = m_clock.now();
}

bool lease_set_state::held(const std::string& name) const {
    return m_terms.live(name);
}

std::int64_t lease_set_state::epoch(const std::string& name) const {
    return m_terms.live_epoch(name);
}

std::vector<std::string> lease_set_state::held_names() const {
    return m_terms.live_names();
}

std::size_t lease_set_state::held_count() const {
    return m_terms.live_count();
}

std::shared_ptr<lease> lease_set_state::grant(const std::string& name) const {
    return m_terms.grant(name);
}

void lease_set_state::end_terms(std::vector<lease_set_event>& events,
                                std::vector<detail::ended_term> ended) {
    for (detail::ended_term& e : ended)
        events.push_back({lease_set_event::kind::lost, std::move(e.name), e.epoch, stop_token{},
                          detail::name_of(e.why, loss_by_end)});
}

std::vector<std::string> lease_set_state::unheld_wanted() const {
    std::vector<std::string> out;
    for (const std::string& name : m_wanted)
        if (acquirable(name))
            out.push_back(name);
    return out;
}

void lease_set_state::acquire_wanted(std::vector<lease_set_event>& events) {
    // 5. Every wanted lease without a term, a batch per round trip (sorted,
    //    as m_wanted is), bounded so that the next renewal is not delayed;
    //    or, before that is due, only those an event said were freed.
    const auto now = m_clock.now();
    if (m_terms.next_renew() != clock::time_point::max() && now >= m_terms.next_renew())
        return; // renew first; the next step comes at once
    if (now < m_next_acquire) {
        std::vector<std::string> freed;
        for (const std::string& name : m_freed)
            if (acquirable(name))
                freed.push_back(name);
        m_freed.clear();
        const std::size_t sent = std::min(freed.size(), m_acquire_batch);
        m_freed.insert(freed.begin() + static_cast<std::ptrdiff_t>(sent), freed.end());
        freed.resize(sent);
        acquire(events, freed, false);
        return;
    }
    m_freed.clear();
    m_next_acquire = now + detail::jittered(m_config.retry_period, m_config.jitter_factor, m_rng);
    std::vector<std::string> names = unheld_wanted();
    const bool more = names.size() > m_acquire_batch;
    if (more)
        names.resize(m_acquire_batch);
    if (acquire(events, names, true) && more)
        m_next_acquire = m_clock.now(); // the next batch at once (after a renewal due)
}

bool lease_set_state::acquire(std::vector<lease_set_event>& events,
                              const std::vector<std::string>& names, bool sizes_batch) {
    if (names.empty())
        return true;
    // Bounded by the next renewal of what is held (which comes first), not
    // by the renew deadline of what is asked for: a cancelled batch is work
    // the server did for nothing.
    const auto sent = m_clock.now();
    const auto bound = std::min(m_terms.call_bound(), m_terms.next_renew());
    if (bound <= sent)
        return false; // renew first
    std::vector<acquire_reply> replies;
    try {
        replies =
            m_db.acquire_many(names, m_config.identity, m_config.ttl, m_config.lock_delay, bound);
        ++m_acquires;
    } catch (const error&) {
        // Outcome unknown: the next try (same identity) extends what was
        // granted. Under load the likely cause is a batch too big to be
        // answered in time: send half as many.
        if (sizes_batch)
            resize_batch(names.size(), clock::duration::max());
        return false;
    }
    const auto arrived = m_clock.now();
    if (sizes_batch)
        resize_batch(names.size(), arrived - sent);
    // A grant counts from the send: one answered too late to be renewed
    // before its renew deadline would be given up at once (and released).
    // Its rows are this identity's on the server, so it is not begun but
    // asked for again at once, in smaller batches: the server extends them
    // (same epoch) faster than it granted them.
    if (arrived > sent + m_config.renew_deadline - m_terms.renew_reserve()) {
        m_next_acquire = arrived;
        ++m_late_batches;
        return true;
    }
    for (std::size_t i = 0; i < names.size() && i < replies.size(); ++i) {
        const acquire_reply& reply = replies[i];
        if (!reply.acquired) {
            // Held elsewhere: try again at its expiry if that comes first.
            m_held_elsewhere.insert(names[i]);
            if (reply.remaining)
                m_next_acquire =
                    std::min(m_next_acquire, arrived + *reply.remaining + expiry_slack);
            continue;
        }
        m_held_elsewhere.erase(names[i]);
        auto l = m_terms.make_grant(names[i]);
        if (!l->apply_acquire(sent, arrived, reply))
            continue;
        lease_set_event e;
        e.what = lease_set_event::kind::acquired;
        e.name = names[i];
        e.epoch = l->epoch();
        e.stop = m_terms.begin(names[i], std::move(l));
        events.push_back(std::move(e));
    }
    return true;
}

void lease_set_state::resize_batch(std::size_t sent, clock::duration took) {
    // A batch should be answered within a renew interval: halve it when one
    // was not, double it again when one took under a quarter of that.
    const clock::duration target = m_config.renew_interval();
    if (took > target)
        m_acquire_batch = std::max<std::size_t>(1, sent / 2);
    else if (took < target / 4 && sent >= m_acquire_batch)
        m_acquire_batch =
            m_acquire_batch > max_acquire_batch / 2 ? max_acquire_batch : 2 * m_acquire_batch;
}

void lease_set_state::callback_done(const std::string& name, std::int64_t epoch) {
    if (m_terms.work_done(name, epoch))
        m_next = m_clock.now();
}

std::vector<lease_set_event> lease_set_state::stop() {
    if (std::exchange(m_stopping, true))
        return {};
    m_next = m_clock.now();
    std::vector<lease_set_event> events;
    end_terms(events, m_terms.end_all(term_end::stopped));
    return events;
}

void lease_set_state::schedule() {
    const auto now = m_clock.now();
    auto next = m_terms.next_due();
    if (!m_stopping && !m_freed.empty())
        next = now;
    if (!m_stopping && !unheld_wanted().empty())
        next = std::min(next, m_next_acquire);
    m_next = std::max(next, now);
}

std::vector<lease_set_event> lease_set_state::step() {
    std::vector<lease_set_event> events;
    std::vector<detail::ended_term> ended;

    // 1-3. Terms no longer held locally, no longer wanted, or whose work
    //      failed end without I/O; every lease with a term is renewed in one
    //      round trip when due; those failing to renew for renew_deadline
    //      are given up.
    m_terms.end_due(
        {}, [this](const std::string& name) { return m_wanted.count(name) == 0; }, ended);
    end_terms(events, std::move(ended));

    // 4. Terms whose on_lost returned: release (one round trip), forget; a
    //    lost one still wanted is tried again at once.
    for (const detail::ended_term& e : m_terms.release_done(m_stopping))
        if (e.why != term_end::failed && m_wanted.count(e.name) > 0)
            m_next_acquire = m_clock.now();

    if (!m_stopping)
        acquire_wanted(events);
    m_stopped = m_stopping && m_terms.empty(); // and stays so: nothing begins once stopping
    schedule();
    return events;
}

} // namespace pglease
