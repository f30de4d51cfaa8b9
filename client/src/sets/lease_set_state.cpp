/// @file lease_set_state.cpp
/// @brief A lease set's step, as numbered steps: one renew, one release and
/// one acquire round trip at most, whatever the number of leases.
#include "pglease/lease_set_state.hpp"

#include "engine/renew_round.hpp"
#include "pglease/error.hpp"

#include <algorithm>

namespace pglease {

using detail::expiry_slack;

lease_set_state::lease_set_state(backend& db, const lease_set_config& config, const clock& clk,
                                 std::uint64_t seed)
    : m_config{config}
    , m_db{db}
    , m_clock{clk}
    , m_options{config.to_lease_options()}
    , m_rng{seed}
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

void lease_set_state::lease_freed(const std::vector<std::string>& names) {
    if (m_stopping)
        return;
    if (names.empty())
        m_next_acquire = m_clock.now(); // which is unknown: try every one
    for (const std::string& name : names)
        if (m_wanted.count(name) > 0 && m_terms.count(name) == 0)
            m_freed.insert(name);
    m_next = m_clock.now();
}

void lease_set_state::remove(const std::string& name) {
    // The term ends at the next step (step 1), which also releases it.
    if (m_wanted.erase(name) > 0)
        m_next = m_clock.now();
}

bool lease_set_state::live(const term& t) const noexcept {
    return !t.ended && t.grant->held();
}

bool lease_set_state::held(const std::string& name) const {
    const std::lock_guard lock{m_mutex};
    const auto it = m_terms.find(name);
    return it != m_terms.end() && live(it->second);
}

std::int64_t lease_set_state::epoch(const std::string& name) const {
    const std::lock_guard lock{m_mutex};
    const auto it = m_terms.find(name);
    return it != m_terms.end() && live(it->second) ? it->second.grant->epoch() : 0;
}

std::vector<std::string> lease_set_state::held_names() const {
    const std::lock_guard lock{m_mutex};
    std::vector<std::string> out;
    for (const auto& [name, t] : m_terms)
        if (live(t))
            out.push_back(name);
    return out;
}

std::size_t lease_set_state::held_count() const {
    const std::lock_guard lock{m_mutex};
    return static_cast<std::size_t>(std::count_if(
        m_terms.begin(), m_terms.end(), [this](const auto& entry) { return live(entry.second); }));
}

std::shared_ptr<lease> lease_set_state::grant(const std::string& name) const {
    const std::lock_guard lock{m_mutex};
    const auto it = m_terms.find(name);
    return it == m_terms.end() ? nullptr : it->second.grant;
}

void lease_set_state::end_term(std::vector<lease_set_event>& events, const std::string& name,
                               term& t, lease_loss why) {
    if (why == lease_loss::lost || why == lease_loss::renew_deadline)
        t.grant->mark_lost();
    t.stop.request_stop();
    {
        const std::lock_guard lock{m_mutex};
        t.ended = true;
    }
    t.release =
        why == lease_loss::removed || (why == lease_loss::stopped && m_config.release_on_stop);
    lease_set_event e;
    e.what = lease_set_event::kind::lost;
    e.name = name;
    e.epoch = t.grant->epoch();
    e.why = why;
    events.push_back(std::move(e));
}

clock::time_point lease_set_state::call_bound() const {
    // No call may outlast the renew deadline of anything held.
    auto bound = clock::time_point::max();
    for (const auto& entry : m_terms)
        detail::bound_by(bound, *entry.second.grant, m_config.renew_deadline);
    return bound;
}

void lease_set_state::renew_all(std::vector<lease_set_event>& events) {
    // 2. One round trip for every lease held, ended terms too until they
    //    are released. m_terms is sorted: rows are locked in name order.
    std::vector<lease*> batch;
    for (auto& entry : m_terms)
        if (entry.second.grant->held())
            batch.push_back(entry.second.grant.get());
    if (batch.empty()) {
        m_next_renew = clock::time_point::max();
        return;
    }
    const auto round = detail::renew_round(m_db, m_clock, m_config, batch, call_bound());
    m_next_renew = round.next;
    if (round.answered) {
        m_renew_latency.store(round.took.count());
        ++m_renews;
        for (auto& entry : m_terms)
            if (live(entry.second))
                entry.second.stop.set_deadline(entry.second.grant->deadline());
    }
    // A lease the server refused ends now (the others at step 1 later).
    for (auto& [name, t] : m_terms)
        if (!t.ended && !t.grant->held())
            end_term(events, name, t, lease_loss::lost);
}

void lease_set_state::give_up(std::vector<lease_set_event>& events) {
    // 3. Renewals failing since renew_deadline: step down before the local
    //    deadline, as the elector does.
    const auto now = m_clock.now();
    for (auto& [name, t] : m_terms)
        if (live(t) && now >= t.grant->renewed_at() + m_config.renew_deadline)
            end_term(events, name, t, lease_loss::renew_deadline);
}

void lease_set_state::release_done() {
    // 4. Terms whose on_lost returned: release (one round trip), forget.
    //    When stopping, wait until every on_lost returned: one release.
    if (m_stopping)
        for (const auto& entry : m_terms)
            if (!entry.second.callback_done && entry.second.grant->held())
                return;
    std::vector<std::string> names;
    std::vector<std::int64_t> epochs;
    std::vector<std::string> done;
    // No later than the earliest renew deadline of what is held (a release
    // of many rows can take longer than one renewal's call_timeout).
    const auto bound = call_bound();
    for (auto& [name, t] : m_terms) {
        if (!t.ended || !t.callback_done)
            continue;
        if (t.release && t.grant->held()) {
            t.grant->mark_lost(); // stop claiming before the server hears of it
            names.push_back(name);
            epochs.push_back(t.grant->epoch());
        }
        done.push_back(name);
    }
    // A broken session is found by the call itself (the next one
    // reconnects): try again, as lease::release() does, within the bound.
    for (int tries = 1; !names.empty(); ++tries) {
        try {
            (void)m_db.release_many(names, m_config.identity, epochs, bound);
            ++m_releases;
            break;
        } catch (const connection_lost&) {
            if (tries >= lease::release_tries || m_clock.now() >= bound)
                break; // unreachable server: the leases expire on their own
        } catch (const error&) {
            break; // a timeout: the server is slow; the leases expire on their own
        }
    }
    const std::lock_guard lock{m_mutex};
    for (const std::string& name : done) {
        m_terms.erase(name);
        if (m_wanted.count(name) > 0) // lost, still wanted: try again now
            m_next_acquire = m_clock.now();
    }
}

std::vector<std::string> lease_set_state::unheld_wanted() const {
    std::vector<std::string> out;
    for (const std::string& name : m_wanted)
        if (m_terms.count(name) == 0)
            out.push_back(name);
    return out;
}

void lease_set_state::acquire_wanted(std::vector<lease_set_event>& events) {
    // 5. Every wanted lease without a term, in one round trip (sorted, as
    //    m_wanted is), bounded so that the next renewal is not delayed; or,
    //    before that is due, only those an event said were freed.
    const auto now = m_clock.now();
    if (m_next_renew != clock::time_point::max() && now >= m_next_renew)
        return; // renew first; the next step comes at once
    if (now < m_next_acquire) {
        std::vector<std::string> freed;
        for (const std::string& name : m_freed)
            if (m_wanted.count(name) > 0 && m_terms.count(name) == 0)
                freed.push_back(name);
        m_freed.clear();
        acquire(events, freed);
        return;
    }
    m_freed.clear();
    m_next_acquire = now + detail::jittered(m_config.retry_period, m_config.jitter_factor, m_rng);
    acquire(events, unheld_wanted());
}

void lease_set_state::acquire(std::vector<lease_set_event>& events,
                              const std::vector<std::string>& names) {
    if (names.empty())
        return;
    const auto bound = std::min(call_bound(), m_next_renew);
    const auto sent = m_clock.now();
    std::vector<acquire_reply> replies;
    try {
        replies = m_db.acquire_many(names, m_config.identity, m_config.ttl, bound);
        ++m_acquires;
    } catch (const error&) {
        return; // outcome unknown: the next try (same identity) extends what was granted
    }
    const auto arrived = m_clock.now();
    for (std::size_t i = 0; i < names.size() && i < replies.size(); ++i) {
        const acquire_reply& reply = replies[i];
        if (!reply.acquired) {
            // Held elsewhere: try again at its expiry if that comes first.
            if (reply.remaining)
                m_next_acquire =
                    std::min(m_next_acquire, arrived + *reply.remaining + expiry_slack);
            continue;
        }
        auto l = std::make_shared<lease>(m_db, names[i], m_options, m_clock);
        l->set_schema(m_config.connection.schema);
        if (!l->apply_acquire(sent, arrived, reply))
            continue;
        term t{l, m_clock};
        t.stop.set_deadline(l->deadline());
        lease_set_event e;
        e.what = lease_set_event::kind::acquired;
        e.name = names[i];
        e.epoch = l->epoch();
        e.stop = t.stop.token();
        {
            const std::lock_guard lock{m_mutex};
            m_terms.insert_or_assign(names[i], std::move(t));
        }
        m_next_renew = std::min(m_next_renew, sent + m_config.renew_interval());
        events.push_back(std::move(e));
    }
}

void lease_set_state::callback_done(const std::string& name, std::int64_t epoch) {
    const auto it = m_terms.find(name);
    if (it == m_terms.end() || !it->second.ended || it->second.grant->epoch() != epoch)
        return;
    it->second.callback_done = true;
    m_next = m_clock.now();
}

std::vector<lease_set_event> lease_set_state::stop() {
    std::vector<lease_set_event> events;
    if (m_stopping)
        return events;
    m_stopping = true;
    for (auto& [name, t] : m_terms)
        if (!t.ended)
            end_term(events, name, t, lease_loss::stopped);
    m_next = m_clock.now();
    return events;
}

void lease_set_state::schedule() {
    const auto now = m_clock.now();
    auto next = clock::time_point::max();
    bool any_held = false;
    for (const auto& [name, t] : m_terms) {
        if (t.ended && t.callback_done)
            next = now; // to release and forget
        if (!t.grant->held())
            continue;
        any_held = true;
        if (!t.ended)
            next = std::min(
                {next, t.grant->deadline(), t.grant->renewed_at() + m_config.renew_deadline});
    }
    if (any_held)
        next = std::min(next, m_next_renew);
    if (!m_stopping && !m_freed.empty())
        next = now;
    if (!m_stopping && !unheld_wanted().empty())
        next = std::min(next, m_next_acquire);
    m_next = std::max(next, now);
}

std::vector<lease_set_event> lease_set_state::step() {
    std::vector<lease_set_event> events;

    // 1. A term no longer held locally, or no longer wanted, ends without I/O.
    for (auto& [name, t] : m_terms) {
        if (t.ended)
            continue;
        if (!t.grant->held())
            end_term(events, name, t, lease_loss::lost);
        else if (m_wanted.count(name) == 0)
            end_term(events, name, t, lease_loss::removed);
    }

    if (m_clock.now() >= m_next_renew)
        renew_all(events);
    give_up(events);
    release_done();
    if (!m_stopping)
        acquire_wanted(events);
    if (m_stopping && m_terms.empty())
        m_stopped = true;
    schedule();
    return events;
}

} // namespace pglease
