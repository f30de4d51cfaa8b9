/// @file fenced_scope.cpp
/// @brief The deadline, the BEGIN retries and the error mapping of one
/// fenced transaction.
#include "pglease/fence.hpp"
#include "pq/call_watchdog.hpp"
#include "pq/pq_handle.hpp"
#include "pq/pqxx_sqlstate.hpp"

#include <pqxx/except>

#include <functional>
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
/// PQgetCancel and no allocation per fenced transaction. Shared, not
/// copied, with the watchdog: a copy of the std::function would allocate
/// (the request owns its PGcancel), and a nested run_fenced() on another
/// session that replaces the cache leaves the outer watch its own.
struct session_cancel {
    int socket = -1;
    int pid = 0;
    std::shared_ptr<const std::function<void()>> request;
};

const std::shared_ptr<const std::function<void()>>&
cancel_for(pqxx::connection_base& conn, int socket, const pqxx::dbtransaction* tx) {
    thread_local session_cancel cached;
    const int pid = conn.backendpid();
    if (cached.request && *cached.request && cached.socket == socket && cached.pid == pid)
        return cached.request;
    auto* handle = tx != nullptr ? pq_handle(*tx) : pq_handle(conn);
    cached = session_cancel{socket, pid,
                            std::make_shared<const std::function<void()>>(cancel_request(handle))};
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

fenced_scope::fenced_scope(pqxx::connection_base& conn, fence_bound bound)
    : m_conn{conn}
    , m_bound{std::move(bound)}
    , m_watch{conn} {}

fenced_scope::~fenced_scope() {
    disarm();
    if (m_dog)
        give_back(std::move(m_dog));
}

bool fenced_scope::past_deadline() const {
    if (!bounded())
        return false;
    const steady::time_point now = steady::now();
    if (now < m_bound.deadline)
        return false; // before the first deadline: before any later one too
    // The deadline now: the first one, or a later one the lease moved to.
    if (m_bound.extend) {
        const steady::time_point later = m_bound.extend();
        if (later > m_bound.deadline)
            return now >= later;
    }
    return true;
}

void fenced_scope::arm(const pqxx::dbtransaction* tx) {
    if (!bounded())
        return;
    if (!m_dog)
        m_dog = take_watchdog();
    m_socket = m_conn.sock();
    m_dog->arm(m_bound.deadline, m_socket, cancel_for(m_conn, m_socket, tx), m_bound.extend);
    m_armed = true;
}

void fenced_scope::disarm() noexcept {
    if (!m_armed)
        return;
    m_armed = false;
    const call_watchdog::outcome out = m_dog->disarm();
    m_cancelled = m_cancelled || out.cancelled;
    m_severed = m_severed || out.severed;
}

void fenced_scope::before_begin() {
    reopen_if_broken(m_conn);
    if (past_deadline())
        throw connection_lost{"fenced transaction: no time left before its deadline; not sent"};
    arm(nullptr);
}

void fenced_scope::after_begin(const pqxx::dbtransaction& tx) {
    // pqxx::work's BEGIN reconnects by itself after a break: watch the new
    // session from now on.
    if (bounded() && m_conn.sock() != m_socket) {
        disarm();
        arm(&tx);
    }
}

bool fenced_scope::retry_broken_begin(int tries) noexcept {
    disarm();
    // Found broken at BEGIN (a server restarted while we were idle):
    // nothing can have committed; reopen and try again, as pqxx::work
    // does. Not when our own deadline cut it.
    return tries < begin_tries && !fired();
}

void fenced_scope::commit(pqxx::transaction_base& tx) {
    if (past_deadline()) {
        tx.abort();
        throw connection_lost{"fenced transaction ran past its deadline before COMMIT: rolled "
                              "back, nothing committed"};
    }
    m_committing = true;
    tx.commit();
    disarm();
    if (fired())
        throw commit_unknown{"fenced transaction: its deadline came while COMMIT was in flight "
                             "and the COMMIT was cancelled: outcome unknown (a cancelled wait "
                             "for a synchronous standby still commits)"};
    check_replicated(m_watch);
}

void fenced_scope::rethrow(std::exception_ptr ep) {
    disarm();
    if (fired()) {
        const std::string how =
            m_severed ? "cancelled, then its connection shut down" : "cancelled";
        try {
            std::rethrow_exception(ep);
        } catch (const error&) {
            throw;
        } catch (const pqxx::failure& e) {
            const std::string sqlstate = sqlstate_of(e);
            if (m_committing)
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
    rethrow_fenced(std::move(ep), m_committing);
}

} // namespace pglease::detail
