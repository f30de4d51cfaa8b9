/// @file group_state.cpp
/// @brief A lease group member's step, as numbered steps.
#include "groups/group_state.hpp"

#include "engine/renew_round.hpp"
#include "pglease/error.hpp"

#include "pglease/internal/group_names.hpp"

#include <algorithm>
#include <utility>

namespace pglease {

using detail::expiry_slack;
using detail::term_end;

/// This holder's name for each way a term ends (term_end's order).
constexpr detail::term_end_names<shard_stop_reason> reason_by_end{
    shard_stop_reason::lost, shard_stop_reason::renew_deadline, shard_stop_reason::moved,
    shard_stop_reason::leaving, shard_stop_reason::failed};

group_state::group_state(backend& db, const group_config& config, const clock& clk,
                         std::uint64_t seed)
    : m_config{config}
    , m_db{db}
    , m_clock{clk}
    , m_prefix{group_prefix(config.group)}
    , m_member{db, group_member_lease(config.group, config.identity, config.weight),
               config.to_lease_options(), clk}
    , m_rng{seed}
    , m_shards{db, clk, m_config}
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
    return m_shards.grant(shard);
}

std::vector<std::string> group_state::owned() const {
    return m_shards.live_names();
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

void group_state::stop_shards(std::vector<group_event>& events,
                              std::vector<detail::ended_term> ended) {
    for (detail::ended_term& t : ended)
        events.push_back({group_event::kind::shard_stopping,
                          std::move(t.name),
                          t.epoch,
                          detail::name_of(t.why, reason_by_end),
                          {}});
}

void group_state::work_failed(const std::string& shard) {
    m_shards.work_failed(shard);
    m_next = m_clock.now();
}

void group_state::work_stopped(const std::string& shard) {
    (void)m_shards.work_done(shard);
    m_next = m_clock.now();
}

void group_state::join() {
    // 4. The membership lease: while it is valid, others count this member.
    if (m_clock.now() < m_join_retry)
        return;
    try {
        if (m_member.acquire(m_shards.call_bound())) {
            m_scan_due = true; // the assignment now includes this member
            m_shards.renew_by(m_member.renewed_at() + m_config.renew_interval());
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

bool group_state::assigned_here(const std::string& shard) const {
    const auto t = m_target.find(shard);
    return t != m_target.end() && t->second == m_config.identity;
}

void group_state::stop_moved(std::vector<group_event>& events) {
    // 6. Shards the assignment gives to another member stop first; they are
    //    released only after their work returned (step 7).
    std::vector<detail::ended_term> ended;
    m_shards.end_where([this](const std::string& shard) { return !assigned_here(shard); },
                       term_end::dropped, ended);
    stop_shards(events, std::move(ended));
}

void group_state::acquire_assigned(std::vector<group_event>& events) {
    // 8. Shards assigned here, free or expired at the last read (or ours
    //    already, e.g. after a restart with the same identity).
    if (m_clock.now() < m_acquire_retry)
        return;
    for (const std::string& shard : m_config.shards) {
        if (!assigned_here(shard) || m_shards.has(shard) || m_shards.resting(shard))
            continue;
        const auto row = m_rows.find(shard);
        if (row != m_rows.end() && row->second.valid && row->second.holder != m_config.identity)
            continue; // wait for its release (NOTIFY) or expiry (m_scan_wake)
        // The acquire runs on the session that renews. Taking an expired
        // grant over may wait on the server for its holder's open fenced
        // transactions (pg_lease.takeover_timeout): renew first, so that
        // wait has the whole renew deadline, and end the acquire early
        // enough for the renewal behind it to fit.
        const bool takeover = row != m_rows.end() && !row->second.holder.empty() &&
                              row->second.holder != m_config.identity;
        const auto now = m_clock.now();
        const auto bound = m_shards.call_bound(&m_member) - m_shards.renew_reserve();
        if (now >= m_shards.next_renew() || bound <= now)
            return; // renew first (the next step comes when it is due)
        if (takeover && now - m_member.renewed_at() > m_shards.renew_reserve()) {
            // Once per renewal: a renewal that failed is retried at its pace.
            if (std::exchange(m_fresh_renew_asked, m_member.renewed_at()) != m_member.renewed_at())
                m_shards.renew_by(now);
            return;
        }
        auto l = m_shards.make_grant(group_shard_lease(m_config.group, shard));
        try {
            if (!l->acquire(bound)) {
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
        group_event e;
        e.what = group_event::kind::shard_started;
        e.shard = shard;
        e.epoch = l->epoch();
        (void)m_shards.begin(shard, std::move(l));
        events.push_back(std::move(e));
    }
}

std::vector<group_event> group_state::leave() {
    if (std::exchange(m_leaving, true))
        return {};
    std::vector<group_event> events;
    stop_shards(events, m_shards.end_all(term_end::stopped));
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
    auto next = m_shards.next_due();
    if (m_member.held())
        next = std::min(next, m_shards.next_renew());
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
    std::vector<detail::ended_term> ended;

    // 1-3. A shard no longer held locally, or whose work failed, stops
    //      without any I/O; one round trip renews the membership and every
    //      shard held, when due; what failed to renew for renew_deadline is
    //      given up.
    m_shards.end_due({&m_member}, nullptr, ended);
    if (m_member.held() && m_clock.now() >= m_member.renewed_at() + m_config.renew_deadline)
        m_member.mark_lost();
    stop_shards(events, std::move(ended));

    if (!m_leaving) {
        if (!m_member.held())
            join();
        const auto now = m_clock.now();
        if (m_scan_due || now >= m_next_scan || now >= m_scan_wake)
            scan(events);
        stop_moved(events);
    }
    // 7. Work stopped: release (the new owner is woken by the NOTIFY), forget.
    (void)m_shards.release_done(false);
    if (!m_leaving && m_member.held())
        acquire_assigned(events);
    m_left = m_leaving && m_shards.empty(); // and stays so: nothing is acquired once leaving
    schedule();
    return events;
}

} // namespace pglease
