/// @file term_table.cpp
/// @brief The terms of a holder of many leases: begin, end, renew in one
/// round trip, give up at the renew deadline, release once the work is done.
#include "engine/term_table.hpp"

#include "engine/renew_round.hpp"
#include "pglease/error.hpp"

#include <algorithm>

namespace pglease::detail {

std::shared_ptr<lease> term_table::make_grant(const std::string& lease_name) const {
    auto l = std::make_shared<lease>(m_db, lease_name, m_options, m_clock);
    l->set_schema(m_config.connection.schema);
    return l;
}

stop_token term_table::begin(const std::string& name, std::shared_ptr<lease> grant) {
    term t{std::move(grant), m_clock};
    t.stop.set_deadline(t.grant->deadline());
    stop_token token = t.stop.token();
    renew_by(t.grant->renewed_at() + m_config.renew_interval());
    const std::lock_guard lock{m_mutex};
    m_terms.insert_or_assign(name, std::move(t));
    return token;
}

void term_table::end_term(const std::string& name, term& t, term_end why,
                          std::vector<ended_term>& out) {
    if (why == term_end::lost || why == term_end::renew_deadline)
        t.grant->mark_lost();
    t.stop.request_stop();
    {
        const std::lock_guard lock{m_mutex};
        t.ended = true;
    }
    t.why = why;
    t.release = why == term_end::dropped || why == term_end::failed ||
                (why == term_end::stopped && m_config.release_on_stop);
    out.push_back({name, t.grant->epoch(), why});
}

void term_table::end_due(const std::vector<lease*>& extra,
                         const std::function<bool(const std::string&)>& dropped,
                         std::vector<ended_term>& out) {
    end_unheld(out);
    if (dropped)
        end_where(dropped, term_end::dropped, out);
    for (const auto& [name, epoch] : m_failed)
        if (const lease* l = running(name); l != nullptr && (epoch == 0 || l->epoch() == epoch))
            end(name, term_end::failed, out);
    m_failed.clear();
    renew_if_due(extra, out);
    give_up(out);
}

void term_table::work_failed(const std::string& name, std::int64_t epoch) {
    m_failed.emplace_back(name, epoch);
}

void term_table::end(const std::string& name, term_end why, std::vector<ended_term>& out) {
    const auto it = m_terms.find(name);
    if (it != m_terms.end() && !it->second.ended)
        end_term(name, it->second, why, out);
}

void term_table::end_where(const std::function<bool(const std::string&)>& ends, term_end why,
                           std::vector<ended_term>& out) {
    for (auto& [name, t] : m_terms)
        if (!t.ended && ends(name))
            end_term(name, t, why, out);
}

std::vector<ended_term> term_table::end_all(term_end why) {
    std::vector<ended_term> out;
    end_where([](const std::string&) { return true; }, why, out);
    return out;
}

void term_table::end_unheld(std::vector<ended_term>& out) {
    for (auto& [name, t] : m_terms)
        if (!t.ended && !t.grant->held())
            end_term(name, t, term_end::lost, out);
}

void term_table::renew_if_due(const std::vector<lease*>& extra, std::vector<ended_term>& out) {
    if (m_clock.now() < m_next_renew)
        return;
    // One round trip for every lease held, ended terms too until they are
    // released. m_terms is sorted: rows are locked in name order.
    std::vector<lease*> batch;
    for (lease* l : extra)
        if (l->held())
            batch.push_back(l);
    for (auto& entry : m_terms)
        if (entry.second.grant->held())
            batch.push_back(entry.second.grant.get());
    if (batch.empty()) {
        m_next_renew = clock::time_point::max();
        return;
    }
    const lease* own = extra.empty() ? nullptr : extra.front();
    const auto round = renew_round(m_db, m_clock, m_config, batch, call_bound(own));
    m_next_renew = round.next;
    if (round.answered) {
        m_renew_latency.store(round.took.count());
        ++m_renews;
        for (auto& entry : m_terms)
            if (is_live(entry.second))
                entry.second.stop.set_deadline(entry.second.grant->deadline());
    }
    // A lease the server refused ends now (the others when found unheld).
    end_unheld(out);
}

void term_table::give_up(std::vector<ended_term>& out) {
    const auto now = m_clock.now();
    for (auto& [name, t] : m_terms)
        if (is_live(t) && now >= t.grant->renewed_at() + m_config.renew_deadline)
            end_term(name, t, term_end::renew_deadline, out);
}

bool term_table::work_done(const std::string& name, std::int64_t epoch) {
    const auto it = m_terms.find(name);
    if (it == m_terms.end() || !it->second.ended ||
        (epoch != 0 && it->second.grant->epoch() != epoch))
        return false;
    it->second.work_done = true;
    return true;
}

void term_table::release(const std::vector<std::string>& names,
                         const std::vector<std::int64_t>& epochs, clock::time_point bound) {
    // A broken session is found by the call itself (the next one
    // reconnects): try again, as lease::release() does, within the bound.
    for (int tries = 1; !names.empty(); ++tries) {
        try {
            (void)m_db.release_many(names, m_config.identity, epochs, bound);
            ++m_releases;
            return;
        } catch (const connection_lost&) {
            if (tries >= lease::release_tries || m_clock.now() >= bound)
                return; // unreachable server: the leases expire on their own
        } catch (const error&) {
            return; // a timeout: the server is slow; the leases expire on their own
        }
    }
}

std::vector<ended_term> term_table::release_done(bool all_together) {
    std::vector<ended_term> done;
    if (all_together)
        for (const auto& entry : m_terms)
            if (!entry.second.work_done && entry.second.grant->held())
                return done;
    std::vector<std::string> names;
    std::vector<std::int64_t> epochs;
    // No later than the earliest renew deadline of what is held (a release
    // of many rows can take longer than one renewal's call_timeout).
    const auto bound = call_bound();
    for (auto& [name, t] : m_terms) {
        if (!t.ended || !t.work_done)
            continue;
        if (t.release && t.grant->held()) {
            names.push_back(t.grant->name()); // the key may be a shard's short name
            epochs.push_back(t.grant->epoch());
        }
        // Stop claiming before the server hears of it; a grant forgotten
        // unreleased is claimed by nobody either.
        t.grant->mark_lost();
        done.push_back({name, t.grant->epoch(), t.why});
    }
    release(names, epochs, bound);
    const auto now = m_clock.now();
    for (auto it = m_rest.begin(); it != m_rest.end();)
        it = it->second <= now ? m_rest.erase(it) : std::next(it);
    const std::lock_guard lock{m_mutex};
    for (const ended_term& e : done) {
        m_terms.erase(e.name);
        if (e.why == term_end::failed)
            m_rest[e.name] = now + m_config.retry_period;
    }
    return done;
}

void term_table::renew_by(clock::time_point when) noexcept {
    m_next_renew = std::min(m_next_renew, when);
}

clock::time_point term_table::call_bound(const lease* extra) const {
    auto bound = clock::time_point::max();
    if (extra != nullptr)
        bound_by(bound, *extra, m_config.renew_deadline);
    for (const auto& entry : m_terms)
        bound_by(bound, *entry.second.grant, m_config.renew_deadline);
    return bound;
}

clock::time_point term_table::next_due() const {
    const auto now = m_clock.now();
    auto next = clock::time_point::max();
    bool any_held = false;
    for (const auto& [name, t] : m_terms) {
        if (t.ended && t.work_done)
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
    for (const auto& entry : m_rest)
        if (entry.second > now)
            next = std::min(next, entry.second);
    return next;
}

const lease* term_table::running(const std::string& name) const {
    const auto it = m_terms.find(name);
    return it == m_terms.end() || it->second.ended ? nullptr : it->second.grant.get();
}

bool term_table::resting(const std::string& name) const {
    const auto it = m_rest.find(name);
    return it != m_rest.end() && m_clock.now() < it->second;
}

bool term_table::live(const std::string& name) const {
    const std::lock_guard lock{m_mutex};
    const auto it = m_terms.find(name);
    return it != m_terms.end() && is_live(it->second);
}

std::int64_t term_table::live_epoch(const std::string& name) const {
    const std::lock_guard lock{m_mutex};
    const auto it = m_terms.find(name);
    return it != m_terms.end() && is_live(it->second) ? it->second.grant->epoch() : 0;
}

std::vector<std::string> term_table::live_names() const {
    const std::lock_guard lock{m_mutex};
    std::vector<std::string> out;
    for (const auto& [name, t] : m_terms)
        if (is_live(t))
            out.push_back(name);
    return out;
}

std::size_t term_table::live_count() const {
    const std::lock_guard lock{m_mutex};
    return static_cast<std::size_t>(
        std::count_if(m_terms.begin(), m_terms.end(),
                      [this](const auto& entry) { return is_live(entry.second); }));
}

std::shared_ptr<lease> term_table::grant(const std::string& name) const {
    const std::lock_guard lock{m_mutex};
    const auto it = m_terms.find(name);
    return it == m_terms.end() ? nullptr : it->second.grant;
}

} // namespace pglease::detail
