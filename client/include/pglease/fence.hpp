/// @file fence.hpp
/// @brief Fenced work: run a function in a transaction that carries the
/// lease's epoch, so the server refuses it once the lease moved on.
///
/// client-go's leaderelection says plainly that it does not fence: a paused
/// leader can still write after a new one was elected. pg_lease does fence:
/// lease_use(name, epoch) declares the token, and the fence trigger on every
/// fenced table refuses the write unless that epoch is the current,
/// unexpired grant, holding a share lock on the lease row until commit, so a
/// takeover cannot commit while a fenced write that passed is still open.
#pragma once

#include "pglease/error.hpp"

#include <pqxx/connection_base>
#include <pqxx/errorhandler>
#include <pqxx/transaction>

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

namespace pglease {

/// What a fenced transaction carries: the lease and the epoch of the grant.
struct fence_token {
    std::string lease_name;
    std::int64_t epoch = 0;
    /// Schema of the pg_lease functions; empty = search_path.
    std::string schema;
};

namespace detail {
/// Runs SELECT lease_use(name, epoch) in @p tx.
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

/// While it lives, notes the server's warning that a COMMIT stopped waiting
/// for its synchronous standby ("canceling wait for synchronous
/// replication": your statement_timeout, a pg_cancel_backend, a shutdown).
/// PostgreSQL then reports the COMMIT as a success although the standby may
/// not have the transaction, so a failover can lose it (patroni#1412):
/// run_fenced() reports that as commit_unknown, not as success.
class syncrep_notice_watch final : public pqxx::errorhandler {
public:
    explicit syncrep_notice_watch(pqxx::connection_base& conn);
    bool operator()(const char msg[]) noexcept override;
    [[nodiscard]] bool seen() const noexcept { return m_seen; }

private:
    bool m_seen = false;
};

/// Throws commit_unknown when @p watch saw the warning.
void check_replicated(const syncrep_notice_watch& watch);
} // namespace detail

/// Runs @p fn(tx) in a new pqxx::work on @p conn whose first statement is
/// lease_use(token.lease_name, token.epoch), then commits; returns what @p fn
/// returns.
///
/// @throws fence_rejected (a lease_lost) when the fence refused a write
///   (LS001 stale epoch, LS002 expired/released/revoked): nothing committed.
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
/// Each fenced write holds a lock on the lease row until commit: it never
/// delays the holder's renewals (pg_lease 1.1), but once the lease expired
/// a new holder's grant ends the transaction instead of waiting for it.
///
/// @code
///   pglease::run_fenced(conn, {"jobs", epoch}, [&](pqxx::work& tx) {
///       tx.exec0("UPDATE jobs SET state = 'done' WHERE id = 7");
///   });
/// @endcode
template <typename F>
auto run_fenced(pqxx::connection_base& conn, const fence_token& token, F&& fn)
    -> std::invoke_result_t<F, pqxx::work&> {
    using result_type = std::invoke_result_t<F, pqxx::work&>;
    bool committing = false;
    const detail::syncrep_notice_watch watch{conn};
    try {
        pqxx::work tx{conn, "pglease_fenced"};
        detail::declare_token(tx, token);
        if constexpr (std::is_void_v<result_type>) {
            std::invoke(std::forward<F>(fn), tx);
            committing = true;
            tx.commit();
            detail::check_replicated(watch);
        } else {
            result_type result = std::invoke(std::forward<F>(fn), tx);
            committing = true;
            tx.commit();
            detail::check_replicated(watch);
            return result;
        }
    } catch (...) {
        detail::rethrow_fenced(std::current_exception(), committing);
    }
}

} // namespace pglease
