/// @file store_session.cpp
/// @brief A session of a lease_store: the backend that a lease, an elector
/// or a scoped_lease runs on, with LISTEN and waits on the store's clock.
#include "pglease/error.hpp"
#include "pglease/testing/lease_store.hpp"
#include "store_state.hpp"

namespace pglease::testing {

/// One "connection" to a lease_store. Like pq_backend, acquire() and renew()
/// are not sent once the caller's deadline has passed; waits end at an
/// event for the lease (after listen()), at interrupt(), or when the
/// store's clock reaches the wake-up time (advance() on a manual clock).
class store_session final : public backend {
public:
    explicit store_session(std::shared_ptr<detail::store_state> state)
        : m_state{state}
        , m_sql{std::move(state)} {
        const std::lock_guard lock{m_state->mutex};
        m_id = m_state->next_session++;
        m_state->waiters[m_id];
    }

    ~store_session() override {
        {
            const std::lock_guard lock{m_state->mutex};
            m_state->waiters.erase(m_id);
        }
        m_state->settled.notify_all();
    }

    store_session(const store_session&) = delete;
    store_session& operator=(const store_session&) = delete;
    store_session(store_session&&) = delete;
    store_session& operator=(store_session&&) = delete;

    acquire_reply acquire(const std::string& name, const std::string& holder,
                          std::chrono::milliseconds ttl, std::chrono::milliseconds lock_delay,
                          clock::time_point deadline) override {
        in_time("lease_acquire", deadline);
        return m_sql.acquire(name, holder, ttl, lock_delay);
    }

    std::optional<std::chrono::microseconds> renew(const std::string& name,
                                                   const std::string& holder, std::int64_t epoch,
                                                   std::chrono::milliseconds ttl,
                                                   clock::time_point deadline) override {
        in_time("lease_renew", deadline);
        return m_sql.renew(name, holder, epoch, ttl);
    }

    bool release(const std::string& name, const std::string& holder, std::int64_t epoch) override {
        return m_sql.release(name, holder, epoch);
    }

    bool revoke(const std::string& name) override { return m_sql.revoke(name); }

    std::optional<std::int64_t> handover(const std::string& name, const std::string& holder,
                                         std::int64_t epoch,
                                         const std::string& successor) override {
        return m_sql.handover(name, holder, epoch, successor);
    }

    std::optional<lease_record> status(const std::string& name) override {
        return m_sql.status(name);
    }

    /// A store has no standby: what a session sees is durable.
    std::optional<lease_record> status_if_durable(const std::string& name) override {
        return m_sql.status(name);
    }

    bool listen() override {
        const std::lock_guard lock{m_state->mutex};
        detail::waiter& w = m_state->waiters[m_id];
        if (!w.listening) {
            w.listening = true;
            w.cursor = m_state->log.size();
        }
        return true;
    }

    /// As UNLISTEN: events from now on are not delivered to this session.
    void unlisten() noexcept override {
        const std::lock_guard lock{m_state->mutex};
        m_state->waiters[m_id].listening = false;
    }

    std::vector<lease_record> list(const std::string& prefix) override {
        return m_sql.list(prefix);
    }

    bool wait_for_change(const std::string& name, clock::time_point until) noexcept override {
        return wait(name, false, until);
    }

    bool wait_for_prefix(const std::string& prefix, clock::time_point until) noexcept override {
        return wait(prefix, true, until);
    }

    bool wait_for_free(const std::set<std::string>& names, clock::time_point until,
                       std::vector<std::string>& freed) noexcept override {
        freed.clear();
        return wait({}, false, until, &names, &freed);
    }

    bool take_handover_hint(const std::string& name, const std::string& holder) noexcept override {
        const auto it = m_handed.find(name);
        if (it == m_handed.end() || it->second != holder)
            return false;
        m_handed.erase(it);
        return true;
    }

    void interrupt() noexcept override {
        {
            const std::lock_guard lock{m_state->mutex};
            m_state->waiters[m_id].interrupted = true;
        }
        m_state->changed.notify_all();
    }

private:
    bool wait(const std::string& name, bool prefix, clock::time_point until,
              const std::set<std::string>* any = nullptr,
              std::vector<std::string>* freed = nullptr) noexcept {
        detail::store_state& s = *m_state;
        std::unique_lock lock{s.mutex};
        detail::waiter& w = s.waiters[m_id];
        w.name = name;
        w.prefix = prefix;
        try {
            w.any = any != nullptr ? *any : std::set<std::string>{};
        } catch (const std::bad_alloc&) {
            w.any.clear(); // then it wakes at `until` only
        }
        w.until = until;
        w.waiting = true;
        w.thread = std::this_thread::get_id();
        ++w.entries;
        s.settled.notify_all();
        while (!s.due(w)) {
            if (s.owns_clock())
                s.changed.wait(lock); // only advance() moves this clock
            else
                s.changed.wait_until(lock, to_steady(s.clk, until));
        }
        w.waiting = false;
        w.left = std::chrono::steady_clock::now();
        s.settled.notify_all();
        if (w.interrupted) {
            w.interrupted = false;
            return false;
        }
        if (w.listening && s.has_event(w)) {
            remember_handovers(s, w.cursor);
            if (freed != nullptr)
                for (std::size_t i = w.cursor; i < s.log.size(); ++i)
                    if (s.freed[i] && w.any.count(s.log[i]) > 0)
                        try {
                            freed->push_back(s.log[i]);
                        } catch (const std::bad_alloc&) {
                            freed->clear(); // unknown which: the caller tries them all
                            break;
                        }
            w.cursor = s.log.size();
            return true;
        }
        return false;
    }

    /// As pq_backend: a lease's hint is its latest event's successor, if
    /// that event was a handover (caller holds the mutex).
    void remember_handovers(const detail::store_state& s, std::size_t from) noexcept {
        try {
            for (std::size_t i = from; i < s.log.size(); ++i) {
                if (s.handed_to[i].empty())
                    m_handed.erase(s.log[i]);
                else
                    m_handed[s.log[i]] = s.handed_to[i];
            }
        } catch (const std::bad_alloc&) {
            m_handed.clear(); // only hints: the waiter acquires as before
        }
    }

    void in_time(const char* what, clock::time_point deadline) const {
        if (m_state->clk.now() >= deadline)
            throw error{std::string{what} +
                        ": no time left before the caller's deadline; not sent"};
    }

    std::shared_ptr<detail::store_state> m_state;
    lease_store m_sql; ///< the same state, without settle()
    std::uint64_t m_id = 0;
    std::map<std::string, std::string> m_handed; ///< take_handover_hint()
};

std::unique_ptr<backend> lease_store::connect() {
    return std::make_unique<store_session>(m_state);
}

} // namespace pglease::testing
