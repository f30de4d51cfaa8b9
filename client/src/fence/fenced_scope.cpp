/// @file fenced_scope.cpp
/// @brief The deadline, the BEGIN retries and the error mapping of one
/// fenced transaction.
#include "pglease/fence.hpp"
#include "pq/call_watchdog.hpp"
#include "pq/pq_handle.hpp"
#include "pq/pqxx_sqlstate.hpp"

#include <pqxx/except>

#include <memory>
#include <string>

namespace pglease::detail {
namespace {

using steady = std::chrono::steady_clock;

/// After the cancel request, how long before the socket is shut down (as
/// for the lease calls: pq_backend's cancel_grace).
constexpr std::chrono::milliseconds cancel_grace{200};

/// Tries of a BEGIN that finds the connection broken (pqxx::work: 1 + 2).
constexpr int begin_tries = 3;

/// One watchdog per thread, kept between calls: a thread of its own is
/// started once, not for every transaction. A nested run_fenced() (inside
/// another's callable) gets a watchdog of its own.
std::unique_ptr<call_watchdog>& cached_watchdog() {
    thread_local std::unique_ptr<call_watchdog> dog;
    return dog;
}

std::unique_ptr<call_watchdog> take_watchdog() {
    if (auto& cached = cached_watchdog())
        return std::move(cached);
    return std::make_unique<call_watchdog>(cancel_grace);
}

void give_back(std::unique_ptr<call_watchdog> dog) noexcept {
    if (auto& cached = cached_watchdog(); !cached)
        cached = std::move(dog);
}

/// The cancel request of the session a thread last watched. A session's
/// cancel key never changes, so while the socket and the backend's pid
/// stay the same the request is reused: no probe transaction, no
/// PQgetCancel and no allocation per fenced transaction.
struct session_cancel {
    int socket = -1;
    int pid = 0;
    std::function<void()> request;
};

const std::function<void()>& cancel_for(pqxx::connection_base& conn,
                                        const pqxx::dbtransaction* tx) {
    thread_local session_cancel cached;
    const int socket = conn.sock();
    const int pid = conn.backendpid();
    if (cached.request && cached.socket == socket && cached.pid == pid)
        return cached.request;
    auto* handle = tx != nullptr ? pq_handle(*tx) : pq_handle(conn);
    cached = session_cancel{socket, pid, cancel_request(handle)};
    return cached.request;
}

/// libpqxx reopens a broken connection at its next statement, but the
/// watch needs the new socket before that: reopen it now. The first
/// activate() after a break only drops the dead handle (libpqxx 6.4), the
/// second connects.
void reopen_if_broken(pqxx::connection_base& conn) {
    if (conn.is_open())
        return;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    try {
        conn.activate();
    } catch (const pqxx::broken_connection&) {
        // The dead handle is gone now: connect below.
    }
    if (!conn.is_open())
        conn.activate();
#pragma GCC diagnostic pop
}

/// True for the ways a statement ends when the watchdog cut it: cancelled
/// (57014), the session gone (class 08, 57P0x, a shut-down socket), or a
/// statement after a swallowed cancel (25P02, transaction aborted).
bool cut_by_deadline(const pqxx::failure& e) {
    if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr)
        return true;
    const std::string sqlstate = sqlstate_of(e);
    return sqlstate.empty() || sqlstate == "57014" || sqlstate == "25P02" ||
           is_connection_sqlstate(sqlstate);
}

} // namespace

struct fenced_scope::impl {
    impl(pqxx::connection_base& c, fence_bound b)
        : conn{c}
        , bound{std::move(b)}
        , watch{c} {}

    [[nodiscard]] bool bounded() const noexcept {
        return bound.deadline != steady::time_point::max();
    }

    /// The deadline now: the first one, or a later one the lease moved to.
    [[nodiscard]] steady::time_point deadline() const {
        if (bound.extend) {
            const steady::time_point later = bound.extend();
            if (later > bound.deadline)
                return later;
        }
        return bound.deadline;
    }

    [[nodiscard]] bool past_deadline() const { return bounded() && steady::now() >= deadline(); }

    [[nodiscard]] bool fired() const noexcept { return cut.cancelled || cut.severed; }

    /// Watches the connection's current session (@p tx: a transaction open
    /// on it, or none).
    void arm(const pqxx::dbtransaction* tx) {
        if (!bounded())
            return;
        if (!dog)
            dog = take_watchdog();
        socket = conn.sock();
        dog->arm(bound.deadline, socket, cancel_for(conn, tx), bound.extend);
        armed = true;
    }

    void disarm() noexcept {
        if (!armed)
            return;
        armed = false;
        const call_watchdog::outcome out = dog->disarm();
        cut.cancelled = cut.cancelled || out.cancelled;
        cut.severed = cut.severed || out.severed;
    }

    pqxx::connection_base& conn;
    fence_bound bound;
    syncrep_notice_watch watch;
    std::unique_ptr<call_watchdog> dog;
    call_watchdog::outcome cut; ///< what the watchdog did, over all tries
    int socket = -1;
    bool armed = false;
    bool committing = false;
};

fenced_scope::fenced_scope(pqxx::connection_base& conn, fence_bound bound)
    : m_impl{std::make_unique<impl>(conn, std::move(bound))} {}

fenced_scope::~fenced_scope() {
    m_impl->disarm();
    if (m_impl->dog)
        give_back(std::move(m_impl->dog));
}

void fenced_scope::begin(const std::function<pqxx::dbtransaction&()>& begin) {
    impl& s = *m_impl;
    for (int tries = 1;; ++tries) {
        reopen_if_broken(s.conn);
        if (s.past_deadline())
            throw connection_lost{"fenced transaction: no time left before its deadline; not sent"};
        s.arm(nullptr);
        try {
            const pqxx::dbtransaction& tx = begin();
            // pqxx::work's BEGIN reconnects by itself after a break: watch
            // the new session from now on.
            if (s.bounded() && s.conn.sock() != s.socket) {
                s.disarm();
                s.arm(&tx);
            }
            return;
        } catch (const pqxx::broken_connection&) {
            s.disarm();
            // Found broken at BEGIN (a server restarted while we were idle):
            // nothing can have committed; reopen and try again, as
            // pqxx::work does. Not when our own deadline cut it.
            if (tries >= begin_tries || s.fired())
                throw;
        }
    }
}

void fenced_scope::commit(pqxx::transaction_base& tx) {
    impl& s = *m_impl;
    if (s.past_deadline()) {
        tx.abort();
        throw connection_lost{"fenced transaction ran past its deadline before COMMIT: rolled "
                              "back, nothing committed"};
    }
    s.committing = true;
    tx.commit();
    s.disarm();
    if (s.fired())
        throw commit_unknown{"fenced transaction: its deadline came while COMMIT was in flight "
                             "and the COMMIT was cancelled: outcome unknown (a cancelled wait "
                             "for a synchronous standby still commits)"};
    check_replicated(s.watch);
}

void fenced_scope::rethrow(std::exception_ptr ep) {
    impl& s = *m_impl;
    s.disarm();
    if (s.fired()) {
        const std::string how =
            s.cut.severed ? "cancelled, then its connection shut down" : "cancelled";
        try {
            std::rethrow_exception(ep);
        } catch (const error&) {
            throw;
        } catch (const pqxx::failure& e) {
            const std::string sqlstate = sqlstate_of(e);
            if (s.committing)
                throw commit_unknown{"fenced transaction: its deadline came while COMMIT was in "
                                     "flight (" +
                                         how + "): outcome unknown: " + e.what(),
                                     sqlstate};
            if (cut_by_deadline(e))
                throw connection_lost{"fenced transaction ran past its deadline (" + how +
                                          "): nothing committed: " + e.what(),
                                      sqlstate};
        } catch (...) {
            // Not libpqxx's: passes through below.
        }
    }
    rethrow_fenced(std::move(ep), s.committing);
}

} // namespace pglease::detail
