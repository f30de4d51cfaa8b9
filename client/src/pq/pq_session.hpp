/// @file pq_session.hpp
/// @brief pq_backend's private parts shared by its source files: the
/// session, the bounded call every statement goes through, and helpers.
/// The session is opened and dropped in pq_session.cpp; pq_backend.cpp and
/// pq_backend_many.cpp only call through it.
#pragma once

#include "pglease/error.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"
#include "pq/call_watchdog.hpp"
#include "pq/event_payload.hpp"
#include "pq/pq_statements.hpp"
#include "pq/pqxx_sqlstate.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pglease {
namespace detail {

/// Collects the lease names of NOTIFY pg_lease payloads: every event's
/// lease name goes to @p changed, the names of leases that are free now
/// (released, revoked) to @p freed as well, and @p handed maps a lease to
/// the successor of its handover while that is its latest event.
inline pqxx_compat::channel_listener::handler
collect_events(std::set<std::string>& changed, std::set<std::string>& freed,
               std::map<std::string, std::string>& handed) {
    return [&changed, &freed, &handed](const std::string& payload, int /*backend_pid*/) {
        detail::notified_event event = detail::read_notified_event(payload);
        if (event.freed)
            freed.insert(event.name);
        if (!event.handed_to.empty() && handed.size() < 1024)
            handed[event.name] = std::move(event.handed_to);
        else
            handed.erase(event.name);
        changed.insert(std::move(event.name));
    };
}

/// The server's warning that a commit stopped waiting for its synchronous
/// standby ("canceling wait for synchronous replication ...": committed
/// locally, maybe not replicated). PostgreSQL then reports success, so
/// without watching for it a grant or renewal could be believed that a
/// failover loses (patroni#1412). The text is PostgreSQL's English one;
/// with another lc_messages only the cancel itself is seen (see call()).
inline constexpr const char* syncrep_warning = "wait for synchronous replication";

/// After a cancel request, how long the reply may take before the
/// connection is shut down.
constexpr std::chrono::milliseconds cancel_grace{200};

/// The earlier of @p deadline and now + @p limit (no overflow for max()).
inline clock::time_point bounded(clock::time_point deadline, std::chrono::milliseconds limit) {
    const auto now = std::chrono::steady_clock::now();
    if (deadline <= now || deadline - now < limit)
        return deadline;
    return now + limit;
}

inline std::string interval_text(std::chrono::milliseconds ttl) {
    return std::to_string(ttl.count()) + " milliseconds";
}

/// A field (pqxx::field, or libpqxx 8's field_ref) as microseconds.
template <typename Field>
std::optional<std::chrono::microseconds> micros(const Field& f) {
    if (f.is_null())
        return std::nullopt;
    return std::chrono::microseconds{std::max<long long>(f.template as<long long>(), 0)};
}

} // namespace detail

/// One open session; the receiver is declared last so it goes first.
struct pq_backend::session {
    session(const std::string& conninfo, clock::time_point connect_by)
        : conn{pqxx_compat::connect_bounded(conninfo, connect_by)}
        , syncrep{conn, detail::syncrep_warning} {}
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    session(session&&) = delete;
    session& operator=(session&&) = delete;
    ~session() {
        end_calls();
        pqxx_compat::close(conn); // no UNLISTEN round trip on a dying session
        listener.reset();
    }

    /// The transaction every call runs in: a nontransaction (each statement
    /// commits by itself) kept open between calls, so a call does not pay
    /// libpqxx's per-transaction setup, nor the read for notifications that
    /// its BEGIN makes. libpqxx delivers no notifications while it is open:
    /// end_calls() closes it before the session waits for them.
    pqxx::nontransaction& calls() {
        if (!open_calls)
            open_calls.emplace(conn, "pglease");
        return *open_calls;
    }

    void end_calls() noexcept { open_calls.reset(); }

    /// Cancels the statement this session runs (the watchdog's request for
    /// every call). It holds the session weakly: a cancel still in flight
    /// when the session was dropped keeps it only while it runs.
    static detail::call_watchdog::cancel_request cancel_of(const std::shared_ptr<session>& s) {
        return std::make_shared<const std::function<void()>>([weak = std::weak_ptr<session>{s}] {
            if (const auto alive = weak.lock())
                alive->conn.cancel_query();
        });
    }
    detail::call_watchdog::cancel_request cancel; ///< cancel_of(this), set once opened

    /// Runs @p st as a statement this session prepared (one parse and plan
    /// per session, not one per call), prepared on first use under its
    /// name. A pooler in transaction mode (pgbouncer before 1.21) moves the
    /// session between server connections, where the statement may be
    /// missing (26000) or already prepared (42P05): from then on this
    /// session sends its statements unnamed. Neither error comes after an
    /// execution, so the call still runs once. A statement of use::once
    /// is always sent unnamed: one round trip, no Parse ahead of it.
    template <typename... Args>
    pqxx::result exec(const detail::statement& st, const Args&... args) {
        pqxx::nontransaction& tx = calls();
        if (prepare && st.how == detail::statement::use::often) {
            try {
                if (std::find(prepared.begin(), prepared.end(), &st) == prepared.end()) {
                    conn.prepare(st.name, st.sql); // bookkeeping only: parsed at first use
                    prepared.push_back(&st);
                }
                return pqxx_compat::exec_prepared(tx, st.name, args...);
            } catch (const pqxx::sql_error& e) {
                const std::string sqlstate = detail::sqlstate_of(e);
                if (sqlstate != "26000" && sqlstate != "42P05")
                    throw;
                prepare = false;
            }
        }
        return pqxx_compat::exec_params(tx, st.sql, args...);
    }

    /// exec() of a statement that returns exactly one row: that row.
    template <typename... Args>
    pqxx::row exec1(const detail::statement& st, const Args&... args) {
        return pqxx_compat::only_row(exec(st, args...), st.sql);
    }

    pqxx_compat::owned_connection conn;
    pqxx_compat::notice_watch syncrep;
    std::unique_ptr<pqxx_compat::channel_listener> listener;
    std::optional<pqxx::nontransaction> open_calls; ///< see calls()
    std::vector<const detail::statement*> prepared; ///< known to conn.prepare()
    bool prepare = true; ///< false once a pooler showed prepared statements do not hold
    std::optional<std::string> store_id; ///< lease_store_id() of this connection's server
};

template <typename F>
auto pq_backend::call(const char* what, clock::time_point deadline, F&& body) {
    // A session opened for this call is connected by its deadline too
    // (libpq's connect_timeout counts whole seconds, at least 2).
    session& s = live(deadline);
    // Built only for a message: a call that succeeds allocates nothing here.
    const auto prefix = [what] { return std::string{what} + ": "; };
    if (std::chrono::steady_clock::now() >= deadline)
        throw error{prefix() + "no time left before the caller's deadline; not sent"};
    // The watchdog cancels the statement at the deadline and shuts the
    // socket down if even that does not bring the reply; the guard disarms
    // it (waiting for a cancel in flight) before any handler below runs.
    detail::call_watchdog::outcome dog;
    try {
        // The session's one cancel request: no allocation per call.
        m_watchdog->arm(deadline, s.conn.sock(), s.cancel);
        s.syncrep.reset();
        auto result = [&] {
            const detail::watch_guard guard{*m_watchdog, dog};
            try {
                return body();
            } catch (...) {
                s.end_calls(); // the next call starts from a fresh transaction object
                throw;
            }
        }();
        // A reply after our cancel, or with the server's warning that the
        // commit stopped waiting for its synchronous standby, is not an
        // acknowledgment: the statement's commit may be lost in a failover.
        // The lease resolves it (see commit_unknown): acquire again with the
        // same identity, or let the local deadline run out.
        const bool commits = std::string_view{what} != "lease_status"; // the one read-only call
        if (commits && s.syncrep.seen())
            throw commit_unknown{prefix() + "the server committed without its synchronous "
                                            "standby (its wait was cancelled): outcome unknown"};
        if (commits && dog.cancelled)
            throw commit_unknown{prefix() + "the reply came after the call was cancelled at its "
                                            "deadline (its commit may not be replicated): "
                                            "outcome unknown"};
        return result;
    } catch (const commit_unknown&) {
        throw;
    } catch (const pqxx::broken_connection& e) {
        drop();
        if (dog.severed)
            throw connection_lost{prefix() + "no reply by the call's deadline, and the cancel "
                                             "request did not land: connection dropped"};
        throw connection_lost{prefix() + e.what()};
    } catch (const pqxx::failure& e) {
        const std::string sqlstate = detail::sqlstate_of(e);
        if (is_connection_sqlstate(sqlstate) || !s.conn.is_open()) {
            drop();
            throw connection_lost{prefix() + e.what(), sqlstate};
        }
        if (dog.cancelled && sqlstate == "57014")
            throw error{prefix() + "no reply by the call's deadline: cancelled", sqlstate};
        throw_for_sqlstate(prefix() + e.what(), sqlstate);
    } catch (const std::exception& e) {
        // usage, conversion and range errors: not the server's, still ours.
        if (!pqxx_compat::is_library_error(e))
            throw;
        throw error{prefix() + e.what()};
    }
}

} // namespace pglease
