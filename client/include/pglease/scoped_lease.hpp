/// @file scoped_lease.hpp
/// @brief RAII: a lease held while the object lives, renewed in the
/// background, released when it goes.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/connection_options.hpp"
#include "pglease/fence.hpp"
#include "pglease/lease.hpp"
#include "pglease/lease_options.hpp"

#include "pglease/internal/clock.hpp"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pglease {

namespace detail {
class loop_thread;
} // namespace detail

/// Tries to acquire at construction (optionally waiting), renews at ttl / 3
/// on a thread of its own while alive, and releases at destruction. It may
/// be empty: test with held() (or operator bool) before relying on it, and
/// again before every action, since the lease can be lost while alive.
///
/// @code
///   pglease::scoped_lease guard{"migrations", {}, std::chrono::seconds{10}};
///   if (!guard)
///       return;                                       // someone else runs them
///   guard.run_fenced(app, [](pqxx::transaction_base& tx) { tx.exec("..."); });
/// @endcode                                            // released here
class scoped_lease {
public:
    /// Connects with @p connection (a session of its own; default: PG*
    /// variables), tries to acquire @p name, waiting up to @p wait (0: one
    /// try). Throws config_error; connection errors leave it empty.
    explicit scoped_lease(std::string name, lease_options options = {},
                          std::chrono::milliseconds wait = std::chrono::milliseconds::zero(),
                          const connection_options& connection = {});

    /// The same over an injected backend and clock (tests).
    scoped_lease(std::unique_ptr<backend> db, std::string name, lease_options options,
                 std::chrono::milliseconds wait, const clock& clk = system_clock());

    /// As the first, and before the guard counts as held, raises the
    /// lease's floor in each downstream database of @p downstreams
    /// (extension 1.4; a connection of its own each, closed with the guard)
    /// within the grant's local deadline, as the elector does at a term's
    /// start. If one cannot be raised, the lease is released at once and
    /// the guard is empty: refusal() says why (no retry, even with @p wait).
    scoped_lease(std::string name, lease_options options, std::chrono::milliseconds wait,
                 const connection_options& connection,
                 const std::vector<connection_options>& downstreams);
    /// The same over injected backends and clock (tests).
    scoped_lease(std::unique_ptr<backend> db, std::string name, lease_options options,
                 std::chrono::milliseconds wait, const clock& clk,
                 std::vector<std::unique_ptr<backend>> downstreams);

    /// release().
    ~scoped_lease();
    /// Never copied or moved: its threads keep its address.
    scoped_lease(const scoped_lease&) = delete;
    scoped_lease& operator=(const scoped_lease&) = delete;
    scoped_lease(scoped_lease&&) = delete;
    scoped_lease& operator=(scoped_lease&&) = delete;

    /// Stops renewing and frees the lease now (errors ignored: it then
    /// expires). Idempotent.
    void release() noexcept;

    /// True while held (local deadline, no I/O).
    [[nodiscard]] bool held() const noexcept { return m_lease.held(); }
    explicit operator bool() const noexcept { return held(); }

    [[nodiscard]] std::int64_t epoch() const noexcept { return m_lease.epoch(); }
    /// Why a grant was given back because a downstream floor could not be
    /// raised (empty otherwise).
    [[nodiscard]] const std::string& refusal() const noexcept { return m_refusal; }
    /// The holder the server named (another identity when this is empty).
    [[nodiscard]] std::string holder() const { return m_lease.holder(); }
    [[nodiscard]] fence_token token() const { return m_lease.token(); }

    /// held() false now (e.g. the application saw LS001/LS002 itself); the
    /// renewals stop at their next turn. Thread-safe.
    void mark_lost() noexcept { m_lease.mark_lost(); }

    /// lease::run_fenced(): lease_lost when not held; a rejection makes
    /// held() false at once; a transaction ended by a takeover after the
    /// lease ran out is lease_evicted.
    template <typename F>
    auto run_fenced(pqxx::connection& conn, F&& fn) {
        return m_lease.run_fenced(conn, std::forward<F>(fn));
    }

private:
    void renew_loop() noexcept;

    const clock& m_clock;
    std::unique_ptr<backend> m_db;
    lease m_lease;
    std::vector<std::unique_ptr<backend>> m_downstreams;
    std::string m_refusal;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_stopping = false;
    bool m_released = false;
    std::unique_ptr<detail::loop_thread>
        m_loop; ///< the renewals; last: joined before the members it uses go
};

} // namespace pglease
