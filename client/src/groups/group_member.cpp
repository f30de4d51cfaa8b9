/// @file group_member.cpp
/// @brief The member's thread: step, start and stop shard work, wait for
/// NOTIFY on the group's leases or the next due time.
///
/// groups/: shards spread among the live members of a lease group: the
/// membership and shard lease names, the assignment (rendezvous hashing by
/// weight), group_state (the state machine) and group_member (its thread and
/// the shards' work).
#include "pglease/internal/group_member.hpp"

#include "engine/call_observer.hpp"
#include "engine/loop_thread.hpp"
#include "engine/validated_config.hpp"
#include "groups/group_state.hpp"
#include "pglease/pq_backend.hpp"

#include <algorithm>

namespace pglease {

group_member::group_member(group_config config, std::unique_ptr<backend> db, const clock& clk)
    : m_config{detail::validated(std::move(config))}
    , m_clock{clk}
    , m_db{db ? std::move(db) : std::make_unique<pq_backend>(m_config.connection)}
    , m_state{std::make_unique<group_state>(*m_db, m_config, m_clock)}
    , m_loop{std::make_unique<detail::loop_thread>()} {}

group_member::~group_member() {
    stop();
}

bool group_member::joined() const noexcept {
    return m_state->joined();
}

bool group_member::holds(const std::string& shard) const {
    return m_state->holds(shard);
}

std::vector<std::string> group_member::owned_shards() const {
    return m_state->owned();
}

std::vector<group_member_info> group_member::members() const {
    return m_state->members();
}

std::shared_ptr<lease> group_member::grant(const std::string& shard) const {
    return m_state->grant(shard);
}

void group_member::start() {
    m_loop->start(nullptr, [this] { run(); });
}

void group_member::stop() noexcept {
    m_loop->stop([this] {
        {
            // Tell shard work first, so it winds down while the loop wakes.
            const std::lock_guard lock{m_mutex};
            for (auto& entry : m_work)
                entry.second.source.request_stop();
        }
        m_db->interrupt();
    });
}

std::string group_member::not_held(const std::string& shard) const {
    return "shard \"" + shard + "\" of group \"" + m_config.group + "\" is not held by " +
           m_config.identity;
}

fence_token group_member::token(const std::string& shard) const {
    return detail::grant_token(m_state->grant(shard), [&] { return not_held(shard); });
}

void group_member::report_lost(const std::string& shard, std::int64_t epoch) noexcept {
    detail::report_grant_lost(m_state->grant(shard), epoch, *m_db);
}

void group_member::start_work(const std::string& shard, std::int64_t epoch) {
    const std::lock_guard lock{m_mutex};
    work& w = m_work[shard];
    w.epoch = epoch;
    if (const auto g = m_state->grant(shard))
        w.source.set_deadline(g->deadline());
    if (!m_config.callbacks.on_shard_started) {
        w.done->store(true);
        return;
    }
    const stop_token token = w.source.token();
    w.thread = std::thread{[this, shard, epoch, token, done = w.done, failed = w.failed] {
        try {
            m_config.callbacks.on_shard_started(shard, epoch, token);
        } catch (...) {
            // The shard's work failed: give the shard up rather than own it
            // without work (reap()), as an elector resigns.
            failed->store(true);
        }
        done->store(true);
        m_db->interrupt(); // so a stopping shard is released at once
    }};
}

void group_member::dispatch(const std::vector<group_event>& events) {
    for (const group_event& e : events) {
        switch (e.what) {
        case group_event::kind::shard_started:
            start_work(e.shard, e.epoch);
            break;
        case group_event::kind::shard_stopping: {
            const std::lock_guard lock{m_mutex};
            const auto it = m_work.find(e.shard);
            if (it == m_work.end()) {
                m_state->work_stopped(e.shard);
                break;
            }
            it->second.stopping = true;
            it->second.reason = e.reason;
            it->second.source.request_stop();
            break;
        }
        case group_event::kind::members_changed:
            detail::call_observer(m_config.callbacks.on_members_changed, e.members);
            break;
        }
    }
}

void group_member::reap() noexcept {
    // Stopping shards whose work returned: on_shard_stopped, then the state
    // may release them.
    std::vector<std::pair<std::string, work>> finished;
    {
        const std::lock_guard lock{m_mutex};
        for (const auto& [shard, w] : m_work)
            if (!w.stopping && w.failed->load())
                m_state->work_failed(shard); // the next step stops it
        for (auto it = m_work.begin(); it != m_work.end();) {
            if (it->second.stopping && it->second.done->load()) {
                finished.emplace_back(it->first, std::move(it->second));
                it = m_work.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& [shard, w] : finished) {
        if (w.thread.joinable())
            w.thread.join();
        detail::call_observer(m_config.callbacks.on_shard_stopped, shard, w.epoch, w.reason);
        m_state->work_stopped(shard);
    }
}

void group_member::update_deadlines() {
    const std::lock_guard lock{m_mutex};
    for (auto& [shard, w] : m_work)
        if (const auto g = m_state->grant(shard); g && g->epoch() == w.epoch)
            w.source.set_deadline(g->deadline());
}

void group_member::run() noexcept {
    (void)m_db->listen();
    bool leaving = false;
    for (;;) {
        try {
            if (m_loop->stopping() && !leaving) {
                leaving = true;
                dispatch(m_state->leave());
            }
            reap();
            dispatch(m_state->step());
            update_deadlines();
            reap(); // shards without work, stopped just now
        } catch (const std::exception&) {
            // Not expected (step() handles backend errors): keep going, but
            // not in a tight loop.
            (void)m_db->wait_for_prefix(m_state->prefix(), m_clock.now() + m_config.retry_period);
            continue;
        }
        if (m_state->left())
            break;
        if (m_db->wait_for_prefix(m_state->prefix(), m_state->next_step()))
            m_state->request_scan();
    }
    // Every shard's work has returned (left() waits for it); join threads.
    const std::lock_guard lock{m_mutex};
    for (auto& entry : m_work)
        if (entry.second.thread.joinable())
            entry.second.thread.join();
    m_work.clear();
}

} // namespace pglease
