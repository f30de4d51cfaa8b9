/// @file group_state.cpp
/// @brief A lease group member's step, as numbered steps.
#include "pglease/group_state.hpp"

#include "engine/renew_round.hpp"
#include "pglease/error.hpp"
#include "pglease/group_names.hpp"

#include <algorithm>

namespace pglease {

using detail::expiry_slack;

group_state::group_state(backend& db, const group_config& config, const clock& clk,
                         std::uint64_t seed)
    : m_config{config}
    , m_db{db}
    , m_clock{clk}
    , m_options{config.to_lease_options()}
    , m_prefix{group_prefix(config.group)}
    , m_member{db, group_member_lease(config.group, config.identity, config.weight), m_options, clk}
    , m_rng{seed}
    , m_next{clk.now()}
    , m_next_scan{clk.now()}
    , m_join_retry{clk.now()}
    , m_acquire_retry{clk.now()} {}

clock::duration group_state::jittered_retry() {
    return detail::jittered(m_config.retry_period, m_config.jitter_factor, m_rng);
}

bool group_state::holds(const std::string& shard) const {
    const auto g = grant(shard);
    return g && g->held();
}

std::shared_ptr<lease> group_state::grant(const std::string& shard) const {
    const std::lock_guard lock{m_mutex};
    const auto it = m_slots.find(shard);
    return it == m_slots.end() ? nullptr : it->second.grant;
}

std::vector<std::string> group_state::owned() const {
    const std::lock_guard lock{m_mutex};
    std::vector<std::string> out;
    for (const auto& [name, s] : m_slots)
        if (!s.stopping && s.grant->held())
            out.push_back(name);
    return out;
}

std::vector<group_member_info> group_state::members() const {
    const std::lock_guard lock{m_mutex};
    return m_live;
}

std::string group_state::assigned_to(const std::string& shard) const {
    const std::lock_guard lock{m_mutex};
    const auto it = m_target.find(shard);
    return it == m_target.end() ? std::string{} : it->second;
}

void group_state::stop_shard(std::vector<group_event>& events, const std::string& shard, slot& s,
                             shard_stop_reason why) {
    if (why == shard_stop_reason::lost || why == shard_stop_reason::renew_deadline)
        s.grant->mark_lost();
    s.stopping = true;
    s.release = (why == shard_stop_reason::moved) ||
                (why == shard_stop_reason::leaving && m_config.release_on_stop);
    group_event e;
    e.what = group_event::kind::shard_stopping;
    e.shard = shard;
    e.epoch = s.grant->epoch();
    e.reason = why;
    events.push_back(std::move(e));
}

clock::time_point group_state::call_bound() const {
    // No call may outlast the renew deadline of anything held.
    auto bound = clock::time_point::max();
    detail::bound_by(bound, m_member, m_config.renew_deadline);
    for (const auto& entry : m_slots)
        detail::bound_by(bound, *entry.second.grant, m_config.renew_deadline);
    return bound;
}

void group_state::renew_all(std::vector<group_event>& events) {
    // 2. One round trip for the membership and every shard held.
    std::vector<lease*> batch;
    if (m_member.held())
        batch.push_back(&m_member);
    for (auto& entry : m_slots)
        if (entry.second.grant->held())
            batch.push_back(entry.second.grant.get());
    if (batch.empty()) {
        m_next_renew = clock::time_point::max();
        return;
    }
    const auto round = detail::renew_round(m_db, m_clock, m_config, batch, call_bound());
    m_next_renew = round.next;
    if (round.answered)
        ++m_rounds;
    // A shard refused by the server stops now (the others at step 1 later).
    for (auto& [name, s] : m_slots)
        if (!s.stopping && !s.grant->held())
            stop_shard(events, name, s, shard_stop_reason::lost);
}

void group_state::give_up(std::vector<group_event>& events) {
    // 3. Renewals failing since renew_deadline: step down before the local
    //    deadline, as the elector does.
    const auto now = m_clock.now();
    if (m_member.held() && now >= m_member.renewed_at() + m_config.renew_deadline)
        m_member.mark_lost();
    for (auto& [name, s] : m_slots)
        if (!s.stopping && s.grant->held() &&
            now >= s.grant->renewed_at() + m_config.renew_deadline)
            stop_shard(events, name, s, shard_stop_reason::renew_deadline);
}

void group_state::join() {
    // 4. The membership lease: while it is valid, others count this member.
    if (m_clock.now() < m_join_retry)
        return;
    try {
        if (m_member.acquire(call_bound())) {
            m_scan_due = true; // the assignment now includes this member
            m_next_renew =
                std::min(m_next_renew, m_member.renewed_at() + m_config.renew_interval());
            return;
        }
    } catch (const error&) {
    }
    m_join_retry = m_clock.now() + jittered_retry();
}

void group_state::scan(std::vector<group_event>& events) {
    // 5. Read every lease of the group in one round trip.
    m_scan_due = false;
    std::vector<lease_record> rows;
    try {
        rows = m_db.list(m_prefix);
    } catch (const error&) {
        m_next_scan = m_clock.now() + jittered_retry();
        m_scan_wake = clock::time_point::max();
        return;
    }
    const auto arrival = m_clock.now();
    std::vector<group_member_info> live;
    std::map<std::string, shard_row> shard_rows;
    auto wake = clock::time_point::max();
    for (const lease_record& r : rows) {
        const auto parsed = parse_group_lease(r.name);
        if (!parsed || parsed->group != m_config.group)
            continue;
        const auto expires = arrival + r.remaining + expiry_slack;
        if (parsed->what == group_lease_name::kind::shard) {
            shard_rows[parsed->shard] = {r.holder, r.valid, expires};
            continue;
        }
        if (!r.valid || r.holder != parsed->identity || parsed->identity == m_config.identity)
            continue;
        live.push_back({parsed->identity, parsed->weight});
        wake = std::min(wake, expires); // a member that dies is noticed at its expiry
    }
    if (m_member.held())
        live.push_back({m_config.identity, m_config.weight});
    std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) {
        return a.identity < b.identity || (a.identity == b.identity && a.weight > b.weight);
    });

    std::map<std::string, std::string> target;
    const bool changed = live != m_live;
    if (changed) {
        const auto owners = assign_shards(m_config.shards, live);
        for (std::size_t i = 0; i < owners.size(); ++i)
            target[m_config.shards[i]] = owners[i];
    }
    {
        const std::lock_guard lock{m_mutex};
        if (changed) {
            m_live = live;
            m_target = std::move(target);
        }
    }
    m_rows = std::move(shard_rows);
    // A shard assigned here but held elsewhere is tried again at its expiry.
    for (const auto& [shard, row] : m_rows) {
        const auto t = m_target.find(shard);
        if (row.valid && row.holder != m_config.identity && t != m_target.end() &&
            t->second == m_config.identity)
            wake = std::min(wake, row.expires);
    }
    m_scan_wake = wake;
    m_next_scan = arrival + jittered_retry();
    if (changed) {
        group_event e;
        e.what = group_event::kind::members_changed;
        e.members = live;
        events.push_back(std::move(e));
    }
}

void group_state::stop_moved(std::vector<group_event>& events) {
    // 6. Shards the assignment gives to another member stop first; they are
    //    released only after their work returned (step 7).
    for (auto& [name, s] : m_slots) {
        if (s.stopping)
            continue;
        const auto t = m_target.find(name);
        if (t == m_target.end() || t->second != m_config.identity)
            stop_shard(events, name, s, shard_stop_reason::moved);
    }
}

void group_state::release_stopped() {
    // 7. Work stopped: release (the new owner is woken by the NOTIFY), forget.
    for (auto it = m_slots.begin(); it != m_slots.end();) {
        slot& s = it->second;
        if (!s.stopping || !s.work_done) {
            ++it;
            continue;
        }
        if (s.release && s.grant->held()) {
            try {
                (void)s.grant->release();
            } catch (const error&) {
                // Unreachable server: the lease expires on its own.
            }
        }
        s.grant->mark_lost();
        const std::lock_guard lock{m_mutex};
        it = m_slots.erase(it);
    }
}

void group_state::acquire_assigned(std::vector<group_event>& events) {
    // 8. Shards assigned here, free or expired at the last read (or ours
    //    already, e.g. after a restart with the same identity).
    if (m_clock.now() < m_acquire_retry)
        return;
    for (const std::string& shard : m_config.shards) {
        const auto t = m_target.find(shard);
        if (t == m_target.end() || t->second != m_config.identity || m_slots.count(shard) > 0)
            continue;
        const auto row = m_rows.find(shard);
        if (row != m_rows.end() && row->second.valid && row->second.holder != m_config.identity)
            continue; // wait for its release (NOTIFY) or expiry (m_scan_wake)
        if (m_clock.now() >= m_next_renew)
            return; // renew first; the next step comes at once
        auto l = std::make_shared<lease>(m_db, group_shard_lease(m_config.group, shard), m_options,
                                         m_clock);
        l->set_schema(m_config.connection.schema);
        try {
            if (!l->acquire(call_bound())) {
                shard_row seen;
                seen.holder = l->holder();
                seen.valid = true;
                seen.expires =
                    l->expiry_hint().value_or(m_clock.now() + m_config.retry_period) + expiry_slack;
                m_scan_wake = std::min(m_scan_wake, seen.expires);
                m_rows[shard] = seen;
                continue;
            }
        } catch (const error&) {
            m_acquire_retry = m_clock.now() + jittered_retry();
            return;
        }
        m_rows[shard] = {m_config.identity, true, l->deadline()};
        m_next_renew = std::min(m_next_renew, l->renewed_at() + m_config.renew_interval());
        {
            const std::lock_guard lock{m_mutex};
            m_slots[shard].grant = l;
        }
        group_event e;
        e.what = group_event::kind::shard_started;
        e.shard = shard;
        e.epoch = l->epoch();
        events.push_back(std::move(e));
    }
}

void group_state::work_stopped(const std::string& shard) {
    const auto it = m_slots.find(shard);
    if (it != m_slots.end() && it->second.stopping)
        it->second.work_done = true;
    m_next = m_clock.now();
}

std::vector<group_event> group_state::leave() {
    std::vector<group_event> events;
    if (m_leaving)
        return events;
    m_leaving = true;
    for (auto& [name, s] : m_slots)
        if (!s.stopping)
            stop_shard(events, name, s, shard_stop_reason::leaving);
    // The membership goes first: the others reassign at once, and take each
    // shard as soon as its work stopped and it was released.
    if (m_config.release_on_stop && m_member.held()) {
        try {
            (void)m_member.release();
        } catch (const error&) {
        }
    }
    m_member.mark_lost();
    m_next = m_clock.now();
    return events;
}

void group_state::schedule() {
    const auto now = m_clock.now();
    auto next = m_next_renew;
    for (const auto& entry : m_slots)
        if (entry.second.grant->held())
            next = std::min(next, entry.second.grant->deadline());
    if (!m_leaving) {
        next = std::min({next, m_next_scan, m_scan_wake});
        if (!m_member.held())
            next = std::min(next, m_join_retry);
        if (m_acquire_retry > now)
            next = std::min(next, m_acquire_retry);
    }
    if (m_scan_due && !m_leaving)
        next = now;
    m_next = std::max(next, now);
}

std::vector<group_event> group_state::step() {
    std::vector<group_event> events;

    // 1. A shard no longer held locally stops without any I/O.
    for (auto& [name, s] : m_slots)
        if (!s.stopping && !s.grant->held())
            stop_shard(events, name, s, shard_stop_reason::lost);

    if (m_clock.now() >= m_next_renew)
        renew_all(events);
    give_up(events);

    if (!m_leaving) {
        if (!m_member.held())
            join();
        const auto now = m_clock.now();
        if (m_scan_due || now >= m_next_scan || now >= m_scan_wake)
            scan(events);
        stop_moved(events);
    }
    release_stopped();
    if (!m_leaving && m_member.held())
        acquire_assigned(events);
    if (m_leaving && m_slots.empty())
        m_left = true;
    schedule();
    return events;
}

} // namespace pglease
