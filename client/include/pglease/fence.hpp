/// @file fence.hpp
/// @brief Fenced work: run a function in a transaction that carries the
/// lease's epoch, so the server refuses it once the lease moved on.
///
/// client-go's leaderelection says plainly that it does not fence: a paused
/// leader can still write after a new one was elected. pg_lease does fence:
/// the transaction declares the token (SET LOCAL pg_lease.epoch in
/// the fenced block's BEGIN, or lease_use(name, epoch)), and the fence trigger on every
/// fenced table refuses the write unless that epoch is the current,
/// unexpired grant, holding a share lock on the grant (in PostgreSQL's lock
/// manager, pg_lease 1.3) until commit, so a takeover cannot commit while a
/// fenced write that passed is still open.
#pragma once

#include "pglease/error.hpp"
#include "pglease/lease.hpp"

#include "pglease/internal/fence_token.hpp"
#include "pglease/internal/fenced_work.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <pqxx/connection>
#include <pqxx/except>
#include <pqxx/nontransaction>
#include <pqxx/transaction>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace pglease {

namespace detail {
/// Runs SELECT lease_use(name, epoch) in @p tx (the pqxx::work& form).
void declare_token(pqxx::transaction_base& tx, const fence_token& token);
/// Rethrows the exception in flight as the pglease type it means:
/// LS001/LS002 fence_rejected, LS003 missing_token, a connection lost
/// before COMMIT connection_lost, during COMMIT (pqxx::in_doubt_error)
/// commit_unknown. Exceptions that are not libpqxx's pass through unchanged.
[[noreturn]] void rethrow_fenced(std::exception_ptr ep, bool committing);
/// True when @p e is how an evicted fenced transaction ends: the session
/// was terminated (connection_lost: 57P01, class 08 or a closed socket) or
/// its statement cancelled (57014). Whether it *was* an eviction depends on
/// whether the lease was still held locally, which the caller knows.
[[nodiscard]] bool is_eviction(const error& e) noexcept;
/// Throws lease_evicted for @p e (a failure of a transaction fenced by @p token).
[[noreturn]] void throw_evicted(const error& e, const fence_token& token);

/// The server's warning that a COMMIT stopped waiting for its synchronous
/// standby ("canceling wait for synchronous replication": your
/// statement_timeout, a pg_cancel_backend, a shutdown). PostgreSQL then
/// reports the COMMIT as a success although the standby may not have the
/// transaction, so a failover can lose it (patroni#1412): run_fenced()
/// reports that as commit_unknown, not as success.
inline constexpr const char* syncrep_warning = "wait for synchronous replication";

/// Throws commit_unknown when @p watch saw the warning.
void check_replicated(const pqxx_compat::notice_watch& watch);

class call_watchdog;

/// One fenced transaction's bookkeeping around the caller's code: the
/// syncrep warning watch, the deadline watchdog (cancel, then shut the
/// socket down), the retries of a BEGIN that found the connection broken,
/// and the mapping of what went wrong to pglease's exceptions.
///
/// It lives on the caller's stack and allocates nothing per transaction
/// (the watchdog is the thread's, kept between calls).
class fenced_scope {
public:
    fenced_scope(pqxx::connection& conn, fence_bound bound);
    fenced_scope(const fenced_scope&) = delete;
    fenced_scope& operator=(const fenced_scope&) = delete;
    fenced_scope(fenced_scope&&) = delete;
    fenced_scope& operator=(fenced_scope&&) = delete;
    ~fenced_scope();

    /// Reopens a broken connection (libpqxx 6.4), starts the watch, then
    /// runs @p begin (which begins the transaction); a BEGIN that finds the
    /// connection broken is retried where libpqxx reopens connections (at
    /// most 3 tries, as 6.4's pqxx::work), after @p forget.
    template <typename Begin, typename Forget>
    void begin(Begin&& begin, Forget&& forget) {
        for (int tries = 1;; ++tries) {
            before_begin();
            try {
                std::invoke(begin);
                after_begin();
                return;
            } catch (const pqxx::broken_connection&) {
                std::invoke(forget);
                if (!retry_broken_begin(tries))
                    throw;
            }
        }
    }
    /// Commits @p tx: refused (rolled back, connection_lost) once the
    /// deadline passed; commit_unknown when the deadline cut into COMMIT or
    /// the server cancelled its wait for the synchronous standby.
    void commit(pqxx::transaction_base& tx);
    /// The same for a fenced block.
    void commit(fenced_block& block);
    /// Ends the watch and rethrows @p ep as what it means (see run_fenced()).
    [[noreturn]] void rethrow(std::exception_ptr ep);

private:
    /// begin()'s steps: before each try (reopen, deadline check, watch);
    /// after a BEGIN that worked (watch the new session if libpqxx 6.4
    /// reconnected); after one that found the connection broken (false:
    /// give up, rethrow).
    void before_begin();
    void after_begin();
    [[nodiscard]] bool retry_broken_begin(int tries) noexcept;

    [[nodiscard]] bool bounded() const noexcept {
        return m_bound.deadline != std::chrono::steady_clock::time_point::max();
    }
    [[nodiscard]] bool past_deadline() const;
    [[nodiscard]] bool fired() const noexcept { return m_cancelled || m_severed; }
    /// Watches the connection's current session.
    void arm();
    void disarm() noexcept;
    /// Ends the transaction: @p commit_now once the deadline checks passed.
    template <typename Commit, typename Abort>
    void commit_with(Commit&& commit_now, Abort&& abort_now);

    pqxx::connection& m_conn;
    fence_bound m_bound;
    pqxx_compat::notice_watch m_watch;
    std::unique_ptr<call_watchdog> m_dog; ///< the thread's, taken while bounded
    bool m_cancelled = false;             ///< what the watchdog did, over all tries
    bool m_severed = false;
    bool m_armed = false;
    bool m_committing = false;
    int m_socket = -1;
};

/// True when @p F can be called with the fenced block's transaction (a
/// callable taking pqxx::transaction_base& or auto&): run_fenced() then
/// declares the token in the BEGIN itself.
template <typename F>
inline constexpr bool takes_fenced_work = std::is_invocable_v<F, pqxx::nontransaction&>;

/// What run_fenced(…, fn) returns: fn's result.
template <typename F>
using fenced_result_t =
    typename std::conditional_t<takes_fenced_work<F>, std::invoke_result<F, pqxx::nontransaction&>,
                                std::invoke_result<F, pqxx::work&>>::type;

/// run_fenced() under @p bound.
template <typename F>
auto run_fenced_bounded(pqxx::connection& conn, const fence_token& token, fence_bound bound, F&& fn)
    -> fenced_result_t<F> {
    using result_type = fenced_result_t<F>;
    fenced_scope scope{conn, std::move(bound)};
    try {
        // Ended (rolled back unless committed) before the catch below ends
        // the watch: a ROLLBACK on a frozen server is bounded too.
        if constexpr (takes_fenced_work<F>) {
            fenced_block block{conn};
            // BEGIN; SET LOCAL pg_lease.epoch: one round trip
            scope.begin([&] { block.begin(token); }, [&] { block.forget(); });
            if constexpr (std::is_void_v<result_type>) {
                std::invoke(std::forward<F>(fn), block.tx());
                scope.commit(block);
            } else {
                result_type result = std::invoke(std::forward<F>(fn), block.tx());
                scope.commit(block);
                return result;
            }
        } else {
            std::optional<pqxx::work> tx;
            scope.begin(
                [&] {
                    tx.emplace(conn, "pglease_fenced"); // BEGIN
                    declare_token(*tx, token);          // SELECT lease_use(...)
                },
                [&] { tx.reset(); });
            if constexpr (std::is_void_v<result_type>) {
                std::invoke(std::forward<F>(fn), *tx);
                scope.commit(*tx);
            } else {
                result_type result = std::invoke(std::forward<F>(fn), *tx);
                scope.commit(*tx);
                return result;
            }
        }
    } catch (...) {
        scope.rethrow(std::current_exception());
    }
}
} // namespace detail

/// Runs @p fn(tx) in a new transaction on @p conn that carries the token
/// before any statement of @p fn, then commits; returns what @p fn returns.
///
/// The transaction: when @p fn takes a pqxx::transaction_base& (or auto&),
/// it gets a fenced block (detail::fenced_block), whose BEGIN carries `SET
/// LOCAL pg_lease.epoch` in the same round trip: as many round trips as a
/// plain pqxx::work. Roll it back by throwing; run_fenced() commits. A @p fn
/// that takes a pqxx::work& (or pqxx::dbtransaction&) still works: it gets
/// a pqxx::work, and lease_use(token.lease_name, token.epoch) costs a round
/// trip of its own.
///
/// @throws fence_rejected (a lease_lost) when the fence refused a write
///   (LS001 stale epoch, LS002 expired/released/revoked): nothing committed.
/// @throws missing_token (LS003), invalid_argument (22023: an empty or
///   oversized lease name, an epoch <= 0; before any I/O in the fenced
///   block form), and the server's other errors as pglease errors.
/// @throws commit_unknown when the connection broke during COMMIT.
/// @throws connection_lost when it broke before COMMIT: nothing committed.
///
/// This free function does not know whether the lease is still held, so a
/// transaction that a takeover ended (the server terminates or cancels the
/// fenced transactions of an expired epoch after pg_lease.takeover_timeout)
/// arrives here as connection_lost or an error with SQLSTATE 57014. The
/// run_fenced() of lease, scoped_lease and elector tell them apart and throw
/// lease_evicted (a lease_lost) when the lease was no longer held locally.
///
/// Each fenced write holds a share lock on its grant until commit: it never
/// delays the holder's renewals (pg_lease 1.1), but once the lease expired
/// a new holder's grant ends the transaction instead of waiting for it.
///
/// Without a timeout this function waits as long as the server does (a
/// frozen server can keep it forever); see the overload with a timeout.
///
/// @code
///   pglease::run_fenced(conn, {"jobs", epoch}, [&](pqxx::transaction_base& tx) {
///       tx.exec("UPDATE jobs SET state = 'done' WHERE id = 7");
///   });
/// @endcode
template <typename F>
auto run_fenced(pqxx::connection& conn, const fence_token& token, F&& fn)
    -> detail::fenced_result_t<F> {
    return detail::run_fenced_bounded(conn, token, {}, std::forward<F>(fn));
}

/// As run_fenced(conn, token, fn), but returns or throws by about
/// @p timeout + 0.5 s, whatever the server or the network does.
///
/// At @p timeout after the call, a statement still running is cancelled
/// (a cancel request), and if that does not end it within 200 ms, or the
/// cancel request itself hangs (a frozen server), the connection's socket
/// is shut down 200 ms later; the session is then gone and the connection
/// reopens at its next use. What is thrown:
/// - cut before COMMIT was sent (in BEGIN, the token's declaration, @p fn's statements,
///   or @p fn returned after the timeout): connection_lost, nothing
///   committed (sqlstate() 57014 when the cancel landed);
/// - cut while COMMIT was in flight: commit_unknown, whatever the server
///   answered afterwards (never reported as a success or a failure).
/// Reopening a broken connection before BEGIN (libpqxx 6.4 only; from 7.0 a
/// broken connection stays closed and this throws connection_lost) is
/// bounded by the connection's own connect_timeout, not by @p timeout.
template <typename F>
auto run_fenced(pqxx::connection& conn, const fence_token& token, F&& fn,
                std::chrono::milliseconds timeout) -> detail::fenced_result_t<F> {
    return detail::run_fenced_bounded(conn, token, {std::chrono::steady_clock::now() + timeout, {}},
                                      std::forward<F>(fn));
}

/// lease::run_fenced() (declared in lease.hpp).
template <typename F>
auto lease::run_fenced(pqxx::connection& conn, F&& fn) {
    const fence_token t = token();
    try {
        return detail::run_fenced_bounded(conn, t, fenced_bound(t.epoch), std::forward<F>(fn));
    } catch (const lease_lost&) {
        if (epoch() == t.epoch)
            mark_lost();
        throw;
    } catch (const error& e) {
        const bool current = epoch() == t.epoch;
        if (!detail::is_eviction(e) || (current && held()))
            throw;
        if (current)
            mark_lost();
        detail::throw_evicted(e, t);
    }
}

} // namespace pglease
