/// @file fenced_scope.cpp
/// @brief The deadline, the BEGIN retries and the error mapping of one
/// fenced transaction.
#include "pglease/internal/fenced_scope.hpp"

#include "pq/call_watchdog.hpp"
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

/// The cancel request of the connection a thread last watched: while the
/// connection, its socket and the backend's pid stay the same, the request
/// is reused, with no allocation per fenced transaction. Shared, not
/// copied, with the watchdog: a nested run_fenced() on another connection
/// that replaces the cache leaves the outer watch its own.
struct session_cancel {
    const pqxx_compat::connection* conn = nullptr;
    int socket = -1;
    int pid = 0;
    std::shared_ptr<const std::function<void()>> request;
};

const std::shared_ptr<const std::function<void()>>& cancel_for(pqxx_compat::connection& conn,
                                                               int socket) {
    thread_local session_cancel cached;
    const int pid = conn.backendpid();
    if (cached.request && cached.conn == &conn && cached.socket == socket && cached.pid == pid)
        return cached.request;
    cached = session_cancel{
        &conn, socket, pid,
        std::make_shared<const std::function<void()>>(pqxx_compat::cancel_request(conn))};
    return cached.request;
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

fenced_scope::fenced_scope(pqxx::connection& conn, fence_bound bound)
    : m_conn{conn}
    , m_bound{std::move(bound)}
    , m_watch{conn, syncrep_warning} {}

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

void fenced_scope::arm() {
    if (!bounded())
        return;
    if (!m_dog)
        m_dog = take_watchdog();
    m_socket = m_conn.sock();
    m_dog->arm(m_bound.deadline, m_socket, cancel_for(m_conn, m_socket), m_bound.extend);
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
    pqxx_compat::reopen_if_broken(m_conn);
    if (!m_conn.is_open())
        throw connection_lost{"fenced transaction: the connection is closed (broken earlier); "
                              "open a new one: not sent"};
    if (past_deadline())
        throw connection_lost{"fenced transaction: no time left before its deadline; not sent"};
    arm();
}

void fenced_scope::after_begin() {
    // libpqxx 6.4's pqxx::work reconnects by itself after a break: watch
    // the new session from now on.
    if (bounded() && m_conn.sock() != m_socket) {
        disarm();
        arm();
    }
}

bool fenced_scope::retry_broken_begin(int tries) noexcept {
    disarm();
    // Found broken at BEGIN (a server restarted while we were idle):
    // nothing can have committed; reopen and try again, as 6.4's
    // pqxx::work does (later versions cannot reopen). Not when our own
    // deadline cut it.
    return pqxx_compat::reopens && tries < begin_tries && !fired();
}

template <typename Commit, typename Abort>
void fenced_scope::commit_with(Commit&& commit_now, Abort&& abort_now) {
    if (past_deadline()) {
        abort_now();
        throw connection_lost{"fenced transaction ran past its deadline before COMMIT: rolled "
                              "back, nothing committed"};
    }
    m_committing = true;
    commit_now();
    disarm();
    if (fired())
        throw commit_unknown{"fenced transaction: its deadline came while COMMIT was in flight "
                             "and the COMMIT was cancelled: outcome unknown (a cancelled wait "
                             "for a synchronous standby still commits)"};
    check_replicated(m_watch);
}

void fenced_scope::commit(pqxx::transaction_base& tx) {
    commit_with([&] { tx.commit(); }, [&] { tx.abort(); });
}

void fenced_scope::commit(fenced_block& block) {
    commit_with([&] { block.commit(); }, [&] { block.rollback(); });
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
