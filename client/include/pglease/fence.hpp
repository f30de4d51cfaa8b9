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
/// Keep fenced transactions short: each fenced write holds a share lock on
/// the lease row until commit, which delays the holder's own renewals.
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
    try {
        pqxx::work tx{conn, "pglease_fenced"};
        detail::declare_token(tx, token);
        if constexpr (std::is_void_v<result_type>) {
            std::invoke(std::forward<F>(fn), tx);
            committing = true;
            tx.commit();
        } else {
            result_type result = std::invoke(std::forward<F>(fn), tx);
            committing = true;
            tx.commit();
            return result;
        }
    } catch (...) {
        detail::rethrow_fenced(std::current_exception(), committing);
    }
}

} // namespace pglease
