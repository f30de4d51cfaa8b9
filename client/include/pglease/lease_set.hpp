/// @file lease_set.hpp
/// @brief Many leases held by one process, renewed with one round trip per
/// cycle, in the background.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/lease_set_config.hpp"

#include "pglease/internal/clock.hpp"
#include "pglease/internal/fenced_grant.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace pglease {

namespace detail {
class callback_queue;
class loop_thread;
} // namespace detail
class lease_set_state;
struct lease_set_event;

/// Holds a set of leases: the names it wants (config.names, add(),
/// remove()), each acquired when free or expired, renewed while wanted,
/// released when removed or at stop(). Construct (which validates), then
/// start(); the destructor stops.
///
/// Each cycle costs at most three round trips on the set's own connection,
/// however many leases it holds (lease_set_state has the steps): ONE
/// lease_renew_many for every lease held, at about ttl / 3; ONE
/// acquire_many for every wanted lease not held, every retry period (and at
/// the earliest expiry the server reported for one held elsewhere); ONE
/// release_many for the leases removed meanwhile. Rows are locked in name
/// order, so two sets wanting the same names do not deadlock. The set
/// LISTENs only while another holder has a lease it wants (a listening
/// session is sent every lease event of its database: 100 sets granted
/// 1,000 leases each would each be sent all 100,000 grants), and wakes
/// only for a wanted lease released or revoked elsewhere, then tries just
/// those leases at once (one acquire_many).
///
/// Guarantees, for every lease, as for one elector:
/// - held(name) and the term's stop_token are true/unsignalled only before
///   the local deadline (send time of the last successful acquire/renew +
///   ttl - safety margin), which comes before the server's expiry, whatever
///   the set's thread is doing;
/// - renewals failing (a lost connection, a stalled server) until
///   renew_deadline end the term (lease_loss::renew_deadline) before that;
///   the set reconnects at its next call and acquires the lease again;
/// - every call is bounded by the earliest renew deadline of what is held
///   and acquire_timeout (a round of many rows may take longer than one
///   lease's renewal; a release that fails leaves its leases to expire);
///   acquires also by the next renewal and by their send + renew_deadline
///   - a renew reserve, in batches halved while the server cannot answer
///   them within renew_interval (lease_set_state, step 5); reconnects by
///   connect_timeout, retried every retry_period x [1, jitter_factor];
/// - a lease is granted to one holder at a time (lease_acquire's
///   compare-and-swap), and run_fenced() writes carry its epoch, so the
///   database refuses a holder that lost it while paused.
///
/// @code
///   pglease::lease_set_config cfg;
///   cfg.names = {"tenant/1", "tenant/2"};
///   cfg.callbacks.on_acquired = [&](const std::string& name, std::int64_t epoch,
///                                   pglease::stop_token stop) {
///       workers.start(name, epoch, stop);   // returns at once; the worker watches stop
///   };
///   cfg.callbacks.on_lost = [&](const std::string& name, std::int64_t, pglease::lease_loss) {
///       workers.join(name);                 // the lease is released after this returns
///   };
///   pglease::lease_set set{cfg};
///   set.start();
///   set.add("tenant/3");
///   set.run_fenced("tenant/1", conn, [&](pqxx::work& tx) { tx.exec("UPDATE ..."); });
/// @endcode
class lease_set {
public:
    /// Validates @p config (config_error); will run over @p db, or else a
    /// pq_backend built from config.connection, once start() is called. No
    /// I/O yet. An injected backend (tests, the test double) comes with the
    /// clock it measures its waits with.
    explicit lease_set(lease_set_config config, std::unique_ptr<backend> db = nullptr,
                       const clock& clk = system_clock());

    /// stop().
    ~lease_set();
    /// Never copied or moved: its threads keep its address.
    lease_set(const lease_set&) = delete;
    lease_set& operator=(const lease_set&) = delete;
    lease_set(lease_set&&) = delete;
    lease_set& operator=(lease_set&&) = delete;

    /// Starts the set's thread and its callback thread. Idempotent; no
    /// effect after stop().
    void start();

    /// Signals every term's stop_token, runs the pending callbacks (on_lost
    /// for every term), releases every lease in one round trip
    /// (release_on_stop) and joins the threads. Meanwhile the leases are
    /// still renewed. Idempotent. Not from a callback.
    void stop() noexcept;

    /// Wants @p name (or each of @p names) from now on: acquired within a
    /// step. Throws config_error for an invalid lease name. Thread-safe.
    void add(const std::string& name);
    void add(const std::vector<std::string>& names);

    /// No longer wants @p name: its stop_token is signalled, on_lost runs,
    /// then it is released. Thread-safe.
    void remove(const std::string& name);

    /// True while @p name is held and its term has not ended. No I/O.
    [[nodiscard]] bool held(const std::string& name) const;

    /// The epoch (fencing token) of @p name while held(), else 0. No I/O.
    [[nodiscard]] std::int64_t epoch(const std::string& name) const;

    /// The names held, sorted. No I/O.
    [[nodiscard]] std::vector<std::string> held_names() const;

    /// How many names are held. No I/O.
    [[nodiscard]] std::size_t held_count() const;

    /// The fencing token of @p name. Throws lease_lost when not held.
    [[nodiscard]] fence_token token(const std::string& name) const;

    /// Runs @p fn(pqxx::work&) on @p conn (an application connection)
    /// fenced by @p name's epoch, as lease::run_fenced(): lease_lost before
    /// any I/O when the lease has no term; a fence rejection or an eviction
    /// ends the term at once (its stop_token is signalled) and is rethrown.
    template <typename F>
    auto run_fenced(const std::string& name, pqxx::connection& conn, F&& fn) {
        return detail::run_fenced_grant(
            grant(name), [&] { return not_held(name); }, *m_db, conn, std::forward<F>(fn));
    }

    /// Tells the set that the grant of @p name with @p epoch is gone (e.g.
    /// the application saw LS001/LS002 on its own): its term ends now.
    void report_lost(const std::string& name, std::int64_t epoch) noexcept;

    /// Round trips so far, by kind. No I/O.
    [[nodiscard]] std::uint64_t renew_rounds() const noexcept;
    [[nodiscard]] std::uint64_t acquire_rounds() const noexcept;
    [[nodiscard]] std::uint64_t release_rounds() const noexcept;

    /// Send to reply of the last successful renew round trip (one
    /// lease_renew_many for every lease held); zero before the first. No I/O.
    [[nodiscard]] clock::duration last_renew_latency() const noexcept;

    [[nodiscard]] const std::string& identity() const noexcept { return m_config.identity; }

private:
    /// add() and remove() calls, applied by the set's thread.
    struct change {
        bool add = true;
        std::string name;
    };

    [[nodiscard]] std::string not_held(const std::string& name) const;
    [[nodiscard]] std::shared_ptr<lease> grant(const std::string& name) const;
    void run() noexcept;
    void apply_changes();
    void follow_events();
    void dispatch(std::vector<lease_set_event> events);

    lease_set_config m_config;
    const clock& m_clock;
    std::unique_ptr<backend> m_db;
    std::unique_ptr<lease_set_state> m_state;
    std::unique_ptr<detail::callback_queue> m_callbacks;
    bool m_listening = false; ///< the set's thread listened (follow_events())

    std::mutex m_mutex; ///< guards m_changes, m_done, m_failed
    std::vector<change> m_changes;
    std::vector<std::pair<std::string, std::int64_t>> m_done;   ///< on_lost returned
    std::vector<std::pair<std::string, std::int64_t>> m_failed; ///< on_acquired threw
    std::unique_ptr<detail::loop_thread> m_loop; ///< last: joined before the members it uses go
};

} // namespace pglease
