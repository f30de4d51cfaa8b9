/// @file pq_backend.cpp
/// @brief pg_lease SQL API over libpqxx 6.4, with reconnect and LISTEN.
#include "pglease/pq_backend.hpp"

#include "call_watchdog.hpp"
#include "conninfo.hpp"
#include "event_payload.hpp"
#include "pglease/error.hpp"
#include "pq_arrays.hpp"
#include "pqxx_sqlstate.hpp"
#include "wakeup_pipe.hpp"

#include <pqxx/pqxx>

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace pglease {
namespace {

/// Collects the lease names of NOTIFY pg_lease payloads.
class receiver final : public pqxx::notification_receiver {
public:
    receiver(pqxx::connection_base& conn, std::set<std::string>& sink)
        : pqxx::notification_receiver{conn, "pg_lease"}
        , m_sink{sink} {}

    void operator()(const std::string& payload, int /*backend_pid*/) override {
        m_sink.insert(detail::notified_lease_name(payload));
    }

private:
    std::set<std::string>& m_sink;
};

/// Notices the server's warning that a commit stopped waiting for its
/// synchronous standby ("canceling wait for synchronous replication ...":
/// committed locally, maybe not replicated). PostgreSQL then reports
/// success, so without this a grant or renewal could be believed that a
/// failover loses (patroni#1412). The text is PostgreSQL's English one;
/// with another lc_messages only the cancel itself is seen (see call()).
class syncrep_watch final : public pqxx::errorhandler {
public:
    explicit syncrep_watch(pqxx::connection_base& conn)
        : pqxx::errorhandler{conn} {}

    bool operator()(const char msg[]) noexcept override {
        const std::string_view text{msg};
        if (text.find("wait for synchronous replication") != std::string_view::npos)
            m_seen = true;
        return true; // the older handlers (stderr) see it too
    }

    bool m_seen = false;
};

/// After a cancel request, how long the reply may take before the
/// connection is shut down.
constexpr std::chrono::milliseconds cancel_grace{200};

/// The earlier of @p deadline and now + @p limit (no overflow for max()).
clock::time_point bounded(clock::time_point deadline, std::chrono::milliseconds limit) {
    const auto now = std::chrono::steady_clock::now();
    if (deadline <= now || deadline - now < limit)
        return deadline;
    return now + limit;
}

std::string interval_text(std::chrono::milliseconds ttl) {
    return std::to_string(ttl.count()) + " milliseconds";
}

std::optional<std::chrono::microseconds> micros(const pqxx::field& f) {
    if (f.is_null())
        return std::nullopt;
    return std::chrono::microseconds{std::max<long long>(f.as<long long>(), 0)};
}

} // namespace

class pq_backend::wakeup : public detail::wakeup_pipe {};

/// One open session; the receiver is declared last so it goes first.
struct pq_backend::session {
    explicit session(const std::string& conninfo)
        : conn{conninfo}
        , syncrep{conn} {}
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    session(session&&) = delete;
    session& operator=(session&&) = delete;
    ~session() {
        conn.disconnect(); // no UNLISTEN round trip on a dying session
        listener.reset();
    }

    pqxx::connection conn;
    syncrep_watch syncrep;
    std::unique_ptr<receiver> listener;
};

pq_backend::pq_backend(connection_options options)
    : m_options{std::move(options)}
    , m_conninfo{detail::build_conninfo(m_options)}
    , m_wakeup{std::make_unique<wakeup>()}
    , m_watchdog{std::make_unique<detail::call_watchdog>(cancel_grace)} {}

pq_backend::~pq_backend() = default;

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

std::string pq_backend::fn(const char* name) const {
    if (m_options.schema.empty())
        return name;
    std::string quoted{'"'};
    for (const char c : m_options.schema) {
        if (c == '"')
            quoted += '"';
        quoted += c;
    }
    return quoted + "\"." + name;
}

pq_backend::session& pq_backend::live() {
    if (m_session && m_session->conn.is_open())
        return *m_session;
    const bool reconnect = static_cast<bool>(m_session);
    drop();
    try {
        auto fresh = std::make_shared<session>(m_conninfo);
        pqxx::nontransaction tx{fresh->conn};
        // Server-side backstop only: each call is bounded on the client side.
        const auto backstop = std::max(m_options.call_timeout, m_options.acquire_timeout);
        tx.exec("SET statement_timeout = " + std::to_string(backstop.count()));
        tx.commit();
        m_session = std::move(fresh);
    } catch (const pqxx::broken_connection& e) {
        throw connection_lost{std::string{"cannot connect: "} + e.what()};
    } catch (const pqxx::sql_error& e) {
        throw_for_sqlstate(std::string{"cannot set up session: "} + e.what(),
                           detail::sqlstate_of(e));
    } catch (const pqxx::failure& e) {
        throw connection_lost{std::string{"cannot connect: "} + e.what()};
    }
    if (m_listen_wanted) {
        try {
            m_session->listener = std::make_unique<receiver>(m_session->conn, m_changed);
        } catch (const std::exception&) {
            // Degrade: waiters wake at the known expiry only.
        }
        if (reconnect)
            m_changed.insert("*"); // events may have been missed meanwhile
    }
    return *m_session;
}

template <typename F>
auto pq_backend::call(const char* what, clock::time_point deadline, F&& body) {
    session& s = live();
    const std::string prefix = std::string{what} + ": ";
    if (std::chrono::steady_clock::now() >= deadline)
        throw error{prefix + "no time left before the caller's deadline; not sent"};
    // The watchdog cancels the statement at the deadline and shuts the
    // socket down if even that does not bring the reply; the guard disarms
    // it (waiting for a cancel in flight) before any handler below runs.
    detail::call_watchdog::outcome dog;
    try {
        // The cancel owns the session: it may return after we dropped it.
        m_watchdog->arm(deadline, s.conn.sock(), [keep = m_session] { keep->conn.cancel_query(); });
        s.syncrep.m_seen = false;
        auto result = [&] {
            const detail::watch_guard guard{*m_watchdog, dog};
            pqxx::nontransaction tx{s.conn};
            return body(tx);
        }();
        // A reply after our cancel, or with the server's warning that the
        // commit stopped waiting for its synchronous standby, is not an
        // acknowledgment: the statement's commit may be lost in a failover.
        // The lease resolves it (see commit_unknown): acquire again with the
        // same identity, or let the local deadline run out.
        const bool commits = std::string_view{what} != "lease_status"; // the one read-only call
        if (commits && s.syncrep.m_seen)
            throw commit_unknown{prefix + "the server committed without its synchronous "
                                          "standby (its wait was cancelled): outcome unknown"};
        if (commits && dog.cancelled)
            throw commit_unknown{prefix + "the reply came after the call was cancelled at its "
                                          "deadline (its commit may not be replicated): "
                                          "outcome unknown"};
        return result;
    } catch (const commit_unknown&) {
        throw;
    } catch (const pqxx::broken_connection& e) {
        drop();
        if (dog.severed)
            throw connection_lost{prefix + "no reply by the call's deadline, and the cancel "
                                           "request did not land: connection dropped"};
        throw connection_lost{prefix + e.what()};
    } catch (const pqxx::failure& e) {
        const std::string sqlstate = detail::sqlstate_of(e);
        if (is_connection_sqlstate(sqlstate) || !s.conn.is_open()) {
            drop();
            throw connection_lost{prefix + e.what(), sqlstate};
        }
        if (dog.cancelled && sqlstate == "57014")
            throw error{prefix + "no reply by the call's deadline: cancelled", sqlstate};
        throw_for_sqlstate(prefix + e.what(), sqlstate);
    } catch (const pqxx::pqxx_exception& e) {
        // usage, conversion and range errors: not the server's, still ours.
        throw error{prefix + e.base().what()};
    }
}

acquire_reply pq_backend::acquire(const std::string& name, const std::string& holder,
                                  std::chrono::milliseconds ttl, clock::time_point deadline) {
    const std::string sql =
        "SELECT r.acquired, r.epoch, coalesce(r.holder, ''), "
        "(extract(epoch FROM (r.expires_at - clock_timestamp())) * 1000000)::bigint FROM " +
        fn("lease_acquire") + "($1, $2, $3::interval) AS r";
    return call("lease_acquire", bounded(deadline, m_options.acquire_timeout),
                [&](pqxx::nontransaction& tx) {
                    const pqxx::row row = tx.exec_params1(sql, name, holder, interval_text(ttl));
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
    const std::string sql =
        "SELECT (extract(epoch FROM (e - clock_timestamp())) * 1000000)::bigint FROM " +
        fn("lease_renew") + "($1, $2, $3, $4::interval) AS e";
    return call("lease_renew", bounded(deadline, m_options.call_timeout),
                [&](pqxx::nontransaction& tx) {
                    return micros(tx.exec_params1(sql, name, holder, epoch, interval_text(ttl))[0]);
                });
}

bool pq_backend::release(const std::string& name, const std::string& holder, std::int64_t epoch) {
    const std::string sql = "SELECT " + fn("lease_release") + "($1, $2, $3)";
    return call("lease_release", bounded(clock::time_point::max(), m_options.call_timeout),
                [&](pqxx::nontransaction& tx) {
                    return tx.exec_params1(sql, name, holder, epoch)[0].as<bool>();
                });
}

bool pq_backend::revoke(const std::string& name) {
    const std::string sql = "SELECT " + fn("lease_revoke") + "($1)";
    return call("lease_revoke", bounded(clock::time_point::max(), m_options.call_timeout),
                [&](pqxx::nontransaction& tx) { return tx.exec_params1(sql, name)[0].as<bool>(); });
}

std::optional<std::int64_t> pq_backend::handover(const std::string& name, const std::string& holder,
                                                 std::int64_t epoch, const std::string& successor) {
    const std::string sql = "SELECT " + fn("lease_handover") + "($1, $2, $3, $4)";
    return call("lease_handover", bounded(clock::time_point::max(), m_options.call_timeout),
                [&](pqxx::nontransaction& tx) -> std::optional<std::int64_t> {
                    const pqxx::field f = tx.exec_params1(sql, name, holder, epoch, successor)[0];
                    if (f.is_null())
                        return std::nullopt;
                    return f.as<std::int64_t>();
                });
}

std::optional<lease_record> pq_backend::status(const std::string& name) {
    const std::string sql =
        "SELECT name, coalesce(holder, ''), epoch, coalesce(valid, false), "
        "greatest(coalesce((extract(epoch FROM remaining) * 1000000)::bigint, 0), 0) FROM " +
        fn("lease_status") + " WHERE name = $1";
    return call("lease_status", bounded(clock::time_point::max(), m_options.call_timeout),
                [&](pqxx::nontransaction& tx) -> std::optional<lease_record> {
                    const pqxx::result r = tx.exec_params(sql, name);
                    if (r.empty())
                        return std::nullopt;
                    lease_record rec;
                    rec.name = r[0][0].as<std::string>();
                    rec.holder = r[0][1].as<std::string>();
                    rec.epoch = r[0][2].as<std::int64_t>();
                    rec.valid = r[0][3].as<bool>();
                    rec.remaining = std::chrono::microseconds{r[0][4].as<long long>()};
                    return rec;
                });
}

std::vector<std::optional<std::chrono::microseconds>>
pq_backend::renew_many(const std::vector<std::string>& names, const std::string& holder,
                       const std::vector<std::int64_t>& epochs, std::chrono::milliseconds ttl,
                       clock::time_point deadline) {
    if (names.size() != epochs.size())
        throw invalid_argument{"renew_many: names and epochs must have the same length"};
    std::vector<std::optional<std::chrono::microseconds>> out(names.size());
    if (names.empty())
        return out;
    // Both arrays travel as one parameter each, in array literal syntax.
    const std::string name_array = detail::text_array(names);
    const std::string epoch_array = detail::bigint_array(epochs);
    const std::string sql =
        "SELECT (extract(epoch FROM (r.expires_at - clock_timestamp())) * 1000000)::bigint FROM " +
        fn("lease_renew_many") + "($1::text[], $2, $3::bigint[], $4::interval) AS r";
    return call("lease_renew_many", bounded(deadline, m_options.call_timeout),
                [&](pqxx::nontransaction& tx) {
                    const pqxx::result r =
                        tx.exec_params(sql, name_array, holder, epoch_array, interval_text(ttl));
                    if (r.size() != names.size())
                        throw error{"lease_renew_many: " + std::to_string(r.size()) + " rows for " +
                                    std::to_string(names.size()) + " leases"};
                    for (std::size_t i = 0; i < names.size(); ++i)
                        out[i] = micros(r[static_cast<pqxx::result::size_type>(i)][0]);
                    return out;
                });
}

std::vector<acquire_reply> pq_backend::acquire_many(const std::vector<std::string>& names,
                                                    const std::string& holder,
                                                    std::chrono::milliseconds ttl,
                                                    clock::time_point deadline) {
    if (names.empty())
        return {};
    // One statement: one round trip and one commit for every grant; rows
    // are locked in the order of @p names (WITH ORDINALITY keeps it).
    const std::string sql =
        "SELECT r.acquired, r.epoch, coalesce(r.holder, ''), "
        "(extract(epoch FROM (r.expires_at - clock_timestamp())) * 1000000)::bigint "
        "FROM unnest($1::text[]) WITH ORDINALITY AS t(n, i), LATERAL " +
        fn("lease_acquire") + "(t.n, $2, $3::interval) AS r ORDER BY t.i";
    return call("lease_acquire_many", bounded(deadline, m_options.acquire_timeout),
                [&](pqxx::nontransaction& tx) {
                    const pqxx::result r =
                        tx.exec_params(sql, detail::text_array(names), holder, interval_text(ttl));
                    if (r.size() != names.size())
                        throw error{"lease_acquire_many: " + std::to_string(r.size()) +
                                    " rows for " + std::to_string(names.size()) + " leases"};
                    std::vector<acquire_reply> out;
                    out.reserve(names.size());
                    for (const auto& row : r) {
                        acquire_reply reply;
                        reply.acquired = row[0].as<bool>();
                        reply.epoch = row[1].is_null() ? 0 : row[1].as<std::int64_t>();
                        reply.holder = row[2].as<std::string>();
                        reply.remaining = micros(row[3]);
                        out.push_back(std::move(reply));
                    }
                    return out;
                });
}

std::vector<bool> pq_backend::release_many(const std::vector<std::string>& names,
                                           const std::string& holder,
                                           const std::vector<std::int64_t>& epochs,
                                           clock::time_point deadline) {
    if (names.size() != epochs.size())
        throw invalid_argument{"release_many: names and epochs must have the same length"};
    if (names.empty())
        return {};
    const std::string sql = "SELECT " + fn("lease_release") +
                            "(t.n, $2, t.e) FROM unnest($1::text[], $3::bigint[]) "
                            "WITH ORDINALITY AS t(n, e, i) ORDER BY t.i";
    return call("lease_release_many", bounded(deadline, m_options.acquire_timeout),
                [&](pqxx::nontransaction& tx) {
                    const pqxx::result r = tx.exec_params(sql, detail::text_array(names), holder,
                                                          detail::bigint_array(epochs));
                    if (r.size() != names.size())
                        throw error{"lease_release_many: " + std::to_string(r.size()) +
                                    " rows for " + std::to_string(names.size()) + " leases"};
                    std::vector<bool> out;
                    out.reserve(names.size());
                    for (const auto& row : r)
                        out.push_back(row[0].as<bool>());
                    return out;
                });
}

std::vector<lease_record> pq_backend::list(const std::string& prefix) {
    const std::string sql =
        "SELECT name, coalesce(holder, ''), epoch, coalesce(valid, false), "
        "greatest(coalesce((extract(epoch FROM remaining) * 1000000)::bigint, 0), 0) FROM " +
        fn("lease_status") + " WHERE starts_with(name, $1) ORDER BY name";
    // "lease_status": a read-only call, as status() (no commit to be unsure of).
    return call("lease_status", bounded(clock::time_point::max(), m_options.call_timeout),
                [&](pqxx::nontransaction& tx) {
                    std::vector<lease_record> out;
                    for (const auto& row : tx.exec_params(sql, prefix)) {
                        lease_record rec;
                        rec.name = row[0].as<std::string>();
                        rec.holder = row[1].as<std::string>();
                        rec.epoch = row[2].as<std::int64_t>();
                        rec.valid = row[3].as<bool>();
                        rec.remaining = std::chrono::microseconds{row[4].as<long long>()};
                        out.push_back(std::move(rec));
                    }
                    return out;
                });
}

bool pq_backend::listen() {
    if (!m_options.listen)
        return false;
    m_listen_wanted = true;
    try {
        session& s = live();
        if (!s.listener)
            s.listener = std::make_unique<receiver>(s.conn, m_changed);
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

template <typename Consume>
bool pq_backend::wait_until_event(Consume&& consume, clock::time_point until) noexcept {
    const auto take = [&] {
        const bool hit = consume() + m_changed.erase("*") > 0;
        if (m_changed.size() > 1024)
            m_changed.clear();
        return hit;
    };
    for (;;) {
        if (m_session && m_session->listener) {
            try {
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

void pq_backend::interrupt() noexcept {
    m_wakeup->signal();
}

} // namespace pglease
