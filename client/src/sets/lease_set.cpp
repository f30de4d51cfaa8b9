/// @file lease_set.cpp
/// @brief The set's thread: apply add/remove, step, hand events to the
/// callback thread, sleep until the next step (or a wake-up).
///
/// sets/: many named leases in one process (lease_set), renewed, acquired
/// and released in one round trip each: lease_set_state is the state
/// machine, lease_set its thread and the callback thread.
#include "pglease/lease_set.hpp"

#include "engine/call_observer.hpp"
#include "engine/callback_queue.hpp"
#include "engine/loop_thread.hpp"
#include "engine/validated_config.hpp"
#include "pglease/pq_backend.hpp"
#include "sets/lease_set_state.hpp"

namespace pglease {

lease_set::lease_set(lease_set_config config, std::unique_ptr<backend> db, const clock& clk)
    : m_config{detail::validated(std::move(config))}
    , m_clock{clk}
    , m_db{db ? std::move(db) : std::make_unique<pq_backend>(m_config.connection)}
    , m_state{std::make_unique<lease_set_state>(*m_db, m_config, m_clock)}
    , m_callbacks{std::make_unique<detail::callback_queue>()}
    , m_loop{std::make_unique<detail::loop_thread>()} {}

lease_set::~lease_set() {
    stop();
}

bool lease_set::held(const std::string& name) const {
    return m_state->held(name);
}

std::int64_t lease_set::epoch(const std::string& name) const {
    return m_state->epoch(name);
}

std::vector<std::string> lease_set::held_names() const {
    return m_state->held_names();
}

std::size_t lease_set::held_count() const {
    return m_state->held_count();
}

std::shared_ptr<lease> lease_set::grant(const std::string& name) const {
    return m_state->grant(name);
}

std::uint64_t lease_set::renew_rounds() const noexcept {
    return m_state->renew_rounds();
}

std::uint64_t lease_set::acquire_rounds() const noexcept {
    return m_state->acquire_rounds();
}

std::uint64_t lease_set::release_rounds() const noexcept {
    return m_state->release_rounds();
}

clock::duration lease_set::last_renew_latency() const noexcept {
    return m_state->last_renew_latency();
}

void lease_set::start() {
    m_loop->start([this] { m_callbacks->start(); }, [this] { run(); });
}

void lease_set::stop() noexcept {
    // The loop ends once every on_lost ran (on the callback thread) and the
    // leases were released.
    m_loop->stop([this] { m_db->interrupt(); });
    m_callbacks->finish();
}

void lease_set::add(const std::string& name) {
    add(std::vector<std::string>{name});
}

void lease_set::add(const std::vector<std::string>& names) {
    for (const std::string& name : names)
        validate_lease_name(name);
    {
        const std::lock_guard lock{m_mutex};
        for (const std::string& name : names)
            m_changes.push_back({true, name});
    }
    m_db->interrupt();
}

void lease_set::remove(const std::string& name) {
    {
        const std::lock_guard lock{m_mutex};
        m_changes.push_back({false, name});
    }
    m_db->interrupt();
}

std::string lease_set::not_held(const std::string& name) const {
    return "lease \"" + name + "\" is not held by the lease set of " + m_config.identity;
}

fence_token lease_set::token(const std::string& name) const {
    return detail::grant_token(m_state->grant(name), [&] { return not_held(name); });
}

void lease_set::report_lost(const std::string& name, std::int64_t epoch) noexcept {
    detail::report_grant_lost(m_state->grant(name), epoch, *m_db);
}

void lease_set::apply_changes() {
    std::vector<change> changes;
    std::vector<std::pair<std::string, std::int64_t>> done;
    std::vector<std::pair<std::string, std::int64_t>> failed;
    {
        const std::lock_guard lock{m_mutex};
        changes.swap(m_changes);
        done.swap(m_done);
        failed.swap(m_failed);
    }
    for (const change& c : changes) {
        if (c.add)
            m_state->add(c.name);
        else
            m_state->remove(c.name);
    }
    for (const auto& [name, epoch] : failed)
        m_state->work_failed(name, epoch);
    for (const auto& [name, epoch] : done)
        m_state->callback_done(name, epoch);
}

void lease_set::dispatch(std::vector<lease_set_event> events) {
    for (lease_set_event& e : events) {
        if (e.what == lease_set_event::kind::acquired) {
            m_callbacks->push([this, name = std::move(e.name), epoch = e.epoch, stop = e.stop] {
                if (!m_config.callbacks.on_acquired)
                    return;
                try {
                    m_config.callbacks.on_acquired(name, epoch, stop);
                } catch (...) {
                    // Its work failed to start: give the lease up rather
                    // than hold it without work, as an elector resigns.
                    {
                        const std::lock_guard lock{m_mutex};
                        m_failed.emplace_back(name, epoch);
                    }
                    m_db->interrupt();
                }
            });
            continue;
        }
        // After on_lost (or at once, in order, without one) the state may
        // release and forget the term.
        m_callbacks->push([this, name = std::move(e.name), epoch = e.epoch, why = e.why] {
            // The term is over all the same if it throws.
            detail::call_observer(m_config.callbacks.on_lost, name, epoch, why);
            {
                const std::lock_guard lock{m_mutex};
                m_done.emplace_back(name, epoch);
            }
            m_db->interrupt();
        });
    }
}

void lease_set::follow_events() {
    // Events only while another holder has a wanted lease: a listening
    // session is sent every lease event of its database (100 sets granted
    // 1,000 leases each at once would each be sent all 100,000 grants,
    // ahead of their renewals' replies).
    const bool wanted = m_state->waits_for_others();
    if (wanted == m_listening)
        return;
    m_listening = wanted;
    if (!wanted) {
        m_db->unlisten();
        return;
    }
    // Once listening, no release is missed; one that came between the
    // refusal and the LISTEN is found by trying those leases again now.
    (void)m_db->listen();
    m_state->lease_freed({});
}

void lease_set::run() noexcept {
    // It wakes at its next step, at interrupt() (add, remove, a callback
    // done, report_lost, stop), or, while it listens, at a NOTIFY for a
    // wanted lease (released, revoked, handed over), which makes the next
    // step try to acquire.
    bool stopping = false;
    std::vector<std::string> freed;
    for (;;) {
        try {
            apply_changes();
            if (m_loop->stopping() && !stopping) {
                stopping = true;
                dispatch(m_state->stop());
            }
            dispatch(m_state->step());
            follow_events();
        } catch (const std::exception&) {
            // Not expected (step() handles backend errors): keep going, but
            // not in a tight loop.
            (void)m_db->wait_for_free({}, m_clock.now() + m_config.retry_period, freed);
            continue;
        }
        if (m_state->stopped())
            break;
        if (m_db->wait_for_free(m_state->wanted(), m_state->next_step(), freed))
            m_state->lease_freed(freed);
    }
}

} // namespace pglease
