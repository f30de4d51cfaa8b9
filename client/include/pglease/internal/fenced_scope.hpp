/// @file fenced_scope.hpp
/// @brief What run_fenced() is made of: one fenced transaction's
/// bookkeeping (deadline watchdog, syncrep warning, BEGIN retries) and the
/// mapping of its failures to pglease's exceptions. Users call run_fenced()
/// (fence.hpp); this is the part of it a template has to show.
#pragma once

#include "pglease/error.hpp"

#include "pglease/internal/fence_token.hpp"
#include "pglease/internal/fenced_work.hpp"
#include "pglease/internal/pqxx_compat.hpp"

#include <pqxx/connection>
#include <pqxx/except>
#include <pqxx/nontransaction>
#include <pqxx/transaction>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
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

} // namespace pglease
