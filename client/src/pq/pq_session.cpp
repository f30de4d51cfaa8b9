/// @file pq_session.cpp
/// @brief The session's life: opened (with backoff and a bounded setup),
/// listened on, dropped; the bounded call (pq_session.hpp) runs on it.
#include "pq/pq_session.hpp"
#include "pq/connect_backoff.hpp"
#include "pq/conninfo.hpp"
#include "pq/session_setup.hpp"

#include <algorithm>
#include <optional>

namespace pglease {

bool pq_backend::connected() const noexcept {
    return m_session && m_session->conn.is_open();
}

int pq_backend::server_pid() const noexcept {
    return m_session ? m_session->conn.backendpid() : 0;
}

void pq_backend::connect() {
    (void)live();
}

void pq_backend::drop() noexcept {
    m_session.reset();
}

pq_backend::session& pq_backend::live(clock::time_point connect_by) {
    if (m_session && m_session->conn.is_open())
        return *m_session;
    const bool reconnect = static_cast<bool>(m_session);
    drop();
    // An overloaded server is not sent another attempt before its backoff
    // ends (connect_backoff.hpp): that costs it nothing.
    auto& backoff = detail::connect_backoff::shared();
    const auto attempt = std::chrono::steady_clock::now();
    if (const auto left = backoff.wait_left(m_conninfo, attempt);
        left > std::chrono::steady_clock::duration::zero())
        throw connection_lost{
            "cannot connect: backing off for " +
            std::to_string(std::chrono::ceil<std::chrono::milliseconds>(left).count()) +
            " ms after " + std::to_string(backoff.failures(m_conninfo)) +
            " attempts the server was too busy to accept"};
    const auto failed = [&](const std::string& why) {
        const auto took = std::chrono::steady_clock::now() - attempt;
        backoff.failed(
            m_conninfo, std::chrono::steady_clock::now(), detail::overloaded_attempt(why),
            std::max<std::chrono::steady_clock::duration>(took, std::chrono::milliseconds{500}),
            m_options.reconnect_backoff_max);
    };
    try {
        auto fresh = std::make_shared<session>(m_conninfo, connect_by);
        fresh->cancel = session::cancel_of(fresh);
        {
            // A connect with a deadline keeps it for the setup too: a server
            // that froze right after the handshake does not hold us here.
            detail::call_watchdog::outcome dog;
            std::optional<detail::watch_guard> guard;
            if (connect_by != clock::time_point::max()) {
                m_watchdog->arm(connect_by, fresh->conn.sock(), fresh->cancel);
                guard.emplace(*m_watchdog, dog);
            }
            pqxx::nontransaction tx{fresh->conn};
            tx.exec(detail::session_setup(m_options, fresh->conn.server_version()));
            tx.commit();
        }
        m_session = std::move(fresh);
        backoff.succeeded(m_conninfo);
    } catch (const pqxx::broken_connection& e) {
        failed(e.what());
        throw connection_lost{std::string{"cannot connect: "} + e.what()};
    } catch (const pqxx::sql_error& e) {
        failed(e.what());
        throw_for_sqlstate(std::string{"cannot set up session: "} + e.what(),
                           detail::sqlstate_of(e));
    } catch (const pqxx::failure& e) {
        failed(e.what());
        throw connection_lost{std::string{"cannot connect: "} + e.what()};
    }
    if (m_listen_wanted) {
        try {
            m_session->listener = std::make_unique<pqxx_compat::channel_listener>(
                m_session->conn, "pg_lease", detail::collect_events(m_changed, m_freed, m_handed));
        } catch (const std::exception&) {
            // Degrade: waiters wake at the known expiry only.
        }
        if (reconnect)
            m_changed.insert("*"); // events may have been missed meanwhile
    }
    return *m_session;
}

} // namespace pglease
