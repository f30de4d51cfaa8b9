/// @file election.cpp
/// @brief tryAcquireOrRenew, as numbered steps.
#include "pglease/internal/election.hpp"

#include "engine/renew_round.hpp"
#include "pglease/internal/downstream.hpp"

#include "pglease/error.hpp"

#include <algorithm>

namespace pglease {

namespace {
constexpr std::chrono::milliseconds min_gap{1};
} // namespace

election::election(backend& db, const elector_config& config, const clock& clk, std::uint64_t seed,
                   std::vector<backend*> downstreams)
    : m_config{config}
    , m_clock{clk}
    , m_db{db}
    , m_lease{db, config.lease_name, config.to_lease_options(), clk}
    , m_downstreams{std::move(downstreams)}
    , m_rng{seed}
    , m_next{clk.now()} {
    m_lease.set_schema(config.connection.schema);
}

clock::duration election::jittered_retry() {
    return detail::jittered(m_config.retry_period, m_config.jitter_factor, m_rng);
}

std::string election::leader() const {
    const std::lock_guard lock{m_mutex};
    return m_leader;
}

void election::observe(std::vector<election_event>& events, const std::string& holder) {
    {
        const std::lock_guard lock{m_mutex};
        if (holder.empty() || holder == m_leader)
            return;
        m_leader = holder;
    }
    election_event e;
    e.what = election_event::kind::new_leader;
    e.identity = holder;
    events.push_back(std::move(e));
}

void election::end_term(std::vector<election_event>& events, step_down_reason why) {
    m_lease.mark_lost();
    m_leading.store(false);
    election_event e;
    e.what = election_event::kind::stopped_leading;
    e.epoch = m_lease.epoch();
    e.reason = why;
    events.push_back(std::move(e));
}

std::vector<election_event> election::step() {
    std::vector<election_event> events;
    const auto now = m_clock.now();

    if (m_leading.load()) {
        // 1. A term that is no longer valid locally ends without any I/O:
        //    a renew was refused, a fenced write was rejected (mark_lost), or
        //    the local deadline passed while we were not looking.
        if (!m_lease.held()) {
            end_term(events, step_down_reason::lost);
            m_next = now; // learn the new holder at once
            return events;
        }
        // 2. No successful renew within the renew deadline: step down even
        //    though the local deadline has not come yet.
        const auto give_up = m_lease.renewed_at() + m_config.renew_deadline;
        if (now >= give_up) {
            end_term(events, step_down_reason::renew_deadline);
            m_next = now + jittered_retry();
            return events;
        }
        // 3. Renew the same epoch. Success moves the deadline (measured from
        //    the send time); NULL means someone else holds it now. The call
        //    is bounded by the renew deadline (and the local deadline): a
        //    renew blocked on the server fails by then, so we step down in
        //    time instead of waiting for it.
        try {
            if (m_lease.renew(give_up)) {
                m_next = m_lease.renewed_at() + m_config.renew_interval();
            } else {
                end_term(events, step_down_reason::lost);
                m_next = m_clock.now();
            }
        } catch (const error&) {
            // 4. Outcome unknown (connection lost, timeout): the deadline
            //    stays where it was; retry, but wake at the renew deadline.
            m_next = std::min(m_clock.now() + m_config.retry_period, give_up);
        }
        return events;
    }

    // 4a. A term was just refused (a downstream could not be raised), or
    //     handed over: wait out the retry period, whatever woke us.
    if (now < m_quiet_until)
        return events;

    // 5. Follower: one acquire. It grants when the lease is free or expired
    //    (new epoch), extends when it is still ours, or names the holder.
    try {
        if (m_lease.acquire()) {
            // 5a. Downstream floors first: no work before the old leader is
            //     shut out of every database the work writes to.
            if (const std::string why = raise_downstreams(); !why.empty()) {
                refuse_term(events, why);
                return events;
            }
            m_leading.store(true);
            election_event e;
            e.what = election_event::kind::started_leading;
            e.epoch = m_lease.epoch();
            events.push_back(std::move(e));
            observe(events, m_config.identity);
            m_next = m_lease.renewed_at() + m_config.renew_interval();
            return events;
        }
        observe(events, m_lease.holder());
        // 6. Sleep until the retry period (jittered) or the reported expiry,
        //    whichever is first; a NOTIFY may wake the owner earlier.
        const auto after = m_clock.now();
        m_next = after + jittered_retry();
        if (const auto hint = m_lease.expiry_hint())
            m_next = std::min(m_next, std::max(*hint, after + min_gap));
    } catch (const error&) {
        m_next = m_clock.now() + jittered_retry();
    }
    return events;
}

std::string election::raise_downstreams() {
    return pglease::raise_downstreams(m_db, numbered_downstreams(m_downstreams),
                                      m_config.lease_name, m_lease.epoch(), m_lease.deadline(),
                                      m_clock);
}

void election::refuse_term(std::vector<election_event>& events, const std::string& why) {
    const std::int64_t epoch = m_lease.epoch();
    try {
        (void)m_lease.release();
    } catch (const error&) {
        // Unreachable server: the grant simply expires on its own.
    }
    m_lease.mark_lost();
    election_event e;
    e.what = election_event::kind::term_refused;
    e.epoch = epoch;
    e.why = why;
    events.push_back(std::move(e));
    m_next = m_clock.now() + jittered_retry();
    m_quiet_until = m_next;
}

std::vector<election_event> election::resign(bool release) {
    std::vector<election_event> events;
    if (!m_leading.load())
        return events;
    if (release) {
        try {
            (void)m_lease.release();
        } catch (const error&) {
            // Unreachable server: the lease simply expires on its own.
        }
    }
    end_term(events, step_down_reason::resigned);
    m_next = m_clock.now() + jittered_retry();
    if (!release)
        m_quiet_until = m_next;
    return events;
}

} // namespace pglease
