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

#include "pglease/internal/fenced_scope.hpp"

#include <pqxx/connection>

#include <chrono>
#include <utility>

namespace pglease {

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
