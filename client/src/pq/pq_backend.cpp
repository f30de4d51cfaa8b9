/// @file pq_backend.cpp
/// @brief pg_lease SQL API over libpqxx 6.4, with reconnect and LISTEN.
///
/// pq/: the backend the holders use against a real server: the session
/// (pq_session.hpp), the statements, bounded calls (call_watchdog, the
/// deadline-bounded connect: pq_session), reconnects with backoff, connection strings,
/// and NOTIFY payloads. The holders reach the server only through it (the
/// handover listener and fenced work run on sessions of their own).
#include "pq/conninfo.hpp"
#include "pq/pq_session.hpp"
#include "pq/wakeup_pipe.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <optional>

namespace pglease {
using detail::bounded;
using detail::cancel_grace;
using detail::interval_text;
using detail::micros;

class pq_backend::wakeup : public detail::wakeup_pipe {};

namespace {
/// How much earlier than its deadline the server ends a raise (at most a
/// quarter of the time left): room for the error to come back.
constexpr std::chrono::milliseconds raise_reply_margin{100};
} // namespace

pq_backend::pq_backend(connection_options options)
    : m_options{std::move(options)}
    , m_conninfo{detail::build_conninfo(m_options)}
    , m_wakeup{std::make_unique<wakeup>()}
    , m_watchdog{std::make_unique<detail::call_watchdog>(cancel_grace)}
    , m_sql{std::make_unique<detail::pq_statements>(m_options.schema)} {}

pq_backend::~pq_backend() = default;

acquire_reply pq_backend::acquire(const std::string& name, const std::string& holder,
                                  std::chrono::milliseconds ttl,
                                  std::chrono::milliseconds lock_delay,
                                  clock::time_point deadline) {
    return call("lease_acquire", bounded(deadline, m_options.acquire_timeout), [&] {
        const pqxx::row row =
            lock_delay == std::chrono::milliseconds::zero()
                ? m_session->exec1(m_sql->acquire, name, holder, interval_text(ttl))
                : m_session->exec1(m_sql->acquire_delayed, name, holder, interval_text(ttl),
                                   interval_text(lock_delay));
        acquire_reply reply;
        reply.acquired = row[0].as<bool>();
        reply.epoch = row[1].is_null() ? 0 : row[1].as<std::int64_t>();
        reply.holder = row[2].as<std::string>();
        reply.remaining = micros(row[3]);
        return reply;
    });
}

std::optional<std::chrono::microseconds>
pq_backend::renew(const std::string& name, const std::string& holder, std::int64_t epoch,
                  std::chrono::milliseconds ttl, clock::time_point deadline) {
    return call("lease_renew", bounded(deadline, m_options.call_timeout), [&] {
        return micros(m_session->exec1(m_sql->renew, name, holder, epoch, interval_text(ttl))[0]);
    });
}

std::string pq_backend::store_id(clock::time_point deadline) {
    if (connected() && m_session->store_id)
        return *m_session->store_id;
    return call("lease_store_id", bounded(deadline, m_options.call_timeout), [&] {
        m_session->store_id = m_session->exec1(m_sql->store_id)[0].as<std::string>();
        return *m_session->store_id;
    });
}

bool pq_backend::raise(const std::string& store, const std::string& name, std::int64_t epoch,
                       clock::time_point deadline) {
    const auto until = bounded(deadline, m_options.acquire_timeout);
    const auto attempt = [&] {
        return call("lease_raise", until, [&] { // connects first, by the same bound
            pqxx::nontransaction& tx = m_session->calls();
            // The server gives up a little before the watchdog would cancel,
            // so that its error (a plain reply, the session kept) is back by then.
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                until - std::chrono::steady_clock::now());
            const auto server_limit = std::max<std::chrono::milliseconds>(
                left - std::min(raise_reply_margin, left / 4), std::chrono::milliseconds{1});
            const pqxx::result r =
                tx.exec("SET LOCAL statement_timeout = " + std::to_string(server_limit.count()) +
                        "; " + m_sql->raise_call + "(" + tx.quote(store) + ", " + tx.quote(name) +
                        ", " + std::to_string(epoch) + ")");
            if (r.size() != 1)
                throw pqxx::unexpected_rows{"expected 1 row from lease_raise, got " +
                                            std::to_string(r.size())};
            return r[0][0].as<bool>();
        });
    };
    const bool reused = connected();
    try {
        return attempt();
    } catch (const connection_lost&) {
        // A session that died while idle (the server restarted, an idle
        // timeout, a pooler) is found out only now: one try on a fresh one,
        // by the same deadline. A raise is idempotent (same epoch: true).
        if (!reused || std::chrono::steady_clock::now() >= until)
            throw;
    }
    return attempt();
}

bool pq_backend::release(const std::string& name, const std::string& holder, std::int64_t epoch) {
    return call("lease_release", bounded(clock::time_point::max(), m_options.call_timeout), [&] {
        return m_session->exec1(m_sql->release, name, holder, epoch)[0].as<bool>();
    });
}

bool pq_backend::revoke(const std::string& name) {
    return call("lease_revoke", bounded(clock::time_point::max(), m_options.call_timeout),
                [&] { return m_session->exec1(m_sql->revoke, name)[0].as<bool>(); });
}

std::optional<std::int64_t> pq_backend::handover(const std::string& name, const std::string& holder,
                                                 std::int64_t epoch, const std::string& successor) {
    return call("lease_handover", bounded(clock::time_point::max(), m_options.call_timeout),
                [&]() -> std::optional<std::int64_t> {
                    const pqxx::row row =
                        m_session->exec1(m_sql->handover, name, holder, epoch, successor);
                    const auto f = row[0];
                    if (f.is_null())
                        return std::nullopt;
                    return f.as<std::int64_t>();
                });
}

bool pq_backend::listen() {
    if (!m_options.listen)
        return false;
    const bool listening = connected() && m_session->listener;
    m_listen_wanted = true; // from here live() listens on every session it opens
    try {
        session& s = live();
        s.end_calls(); // LISTEN outside libpqxx's open transaction object
        if (!s.listener)
            s.listener = std::make_unique<pqxx_compat::channel_listener>(
                s.conn, "pg_lease", detail::collect_events(m_changed, m_freed, m_handed));
    } catch (const std::exception&) {
        return false;
    }
    if (listening)
        return true;
    // A session that listens may be told of a handover to its holder, which
    // it confirms with status_if_durable(). A session's first such read
    // plans against cold caches (about 1 ms): paid here, off that path.
    try {
        (void)read_status(m_sql->status_if_durable, std::string{});
    } catch (const std::exception&) {
        // Only a warm-up: the read runs cold later if it must.
    }
    return true;
}

void pq_backend::unlisten() noexcept {
    m_listen_wanted = false; // no session opened from now on listens
    if (!connected() || !m_session->listener)
        return;
    try {
        // The UNLISTEN round trip under the call's watchdog, as any call.
        (void)call("UNLISTEN", bounded(clock::time_point::max(), m_options.call_timeout), [&] {
            m_session->end_calls(); // outside libpqxx's open transaction object
            m_session->listener.reset();
            return true;
        });
    } catch (const std::exception&) {
        drop(); // a session that did not answer listens no more once closed
    }
}

template <typename Consume>
bool pq_backend::wait_until_event(Consume&& consume, clock::time_point until) noexcept {
    const auto take = [&] {
        const bool hit = consume() + m_changed.erase("*") + m_freed.erase("*") > 0;
        if (m_changed.size() > 1024)
            m_changed.clear();
        if (m_freed.size() > 1024)
            m_freed.clear();
        return hit;
    };
    for (;;) {
        if (m_session && m_session->listener) {
            try {
                m_session->end_calls(); // libpqxx delivers nothing while it is open
                m_session->conn.get_notifs();
            } catch (const std::exception&) {
                drop();       // the next call reconnects (and re-listens):
                return false; // wake the caller for it now, not at `until`
            }
        }
        if (take())
            return true;
        const auto now = std::chrono::steady_clock::now();
        if (now >= until)
            return false;
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
        pollfd fds[2] = {{m_wakeup->read_fd(), POLLIN, 0}, {-1, POLLIN, 0}};
        nfds_t count = 1;
        if (m_session && m_session->listener && m_session->conn.sock() >= 0) {
            fds[1].fd = m_session->conn.sock();
            count = 2;
        }
        const int rc = ::poll(fds, count, static_cast<int>(std::min<long long>(left, INT_MAX)));
        if (rc < 0 && errno != EINTR)
            return false;
        if (rc > 0 && (fds[0].revents & POLLIN) != 0) {
            m_wakeup->drain();
            return false;
        }
    }
}

bool pq_backend::wait_for_change(const std::string& name, clock::time_point until) noexcept {
    return wait_until_event([&]() -> std::size_t { return m_changed.erase(name); }, until);
}

bool pq_backend::wait_for_prefix(const std::string& prefix, clock::time_point until) noexcept {
    return wait_until_event(
        [&]() -> std::size_t {
            std::size_t hits = 0;
            auto it = m_changed.lower_bound(prefix);
            while (it != m_changed.end() && it->compare(0, prefix.size(), prefix) == 0) {
                it = m_changed.erase(it);
                ++hits;
            }
            return hits;
        },
        until);
}

bool pq_backend::wait_for_free(const std::set<std::string>& names, clock::time_point until,
                               std::vector<std::string>& freed) noexcept {
    // m_freed holds the few leases freed since the last wait: look those
    // up in the wanted set, not the other way round.
    freed.clear();
    return wait_until_event(
        [&]() -> std::size_t {
            std::size_t hits = 0;
            for (auto it = m_freed.begin(); it != m_freed.end();) {
                if (names.count(*it) > 0) {
                    try {
                        freed.push_back(*it);
                    } catch (const std::bad_alloc&) {
                        freed.clear(); // unknown which: the caller tries them all
                    }
                    it = m_freed.erase(it);
                    ++hits;
                } else {
                    ++it;
                }
            }
            return hits;
        },
        until);
}

bool pq_backend::take_handover_hint(const std::string& name, const std::string& holder) noexcept {
    const auto it = m_handed.find(name);
    if (it == m_handed.end() || it->second != holder)
        return false;
    m_handed.erase(it);
    return true;
}

void pq_backend::interrupt() noexcept {
    m_wakeup->signal();
}

} // namespace pglease
