/// @file elector.hpp
/// @brief Leader election in the background, shaped like client-go's
/// leaderelection.LeaderElector, with fencing.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/elector_config.hpp"
#include "pglease/fence.hpp"

#include "pglease/internal/clock.hpp"
#include "pglease/internal/election.hpp"
#include "pglease/internal/handover.hpp"
#include "pglease/internal/stop_token.hpp"

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace pglease {

namespace detail {
class loop_thread;
} // namespace detail

class handover_listener;
class handover_requester;
class handover_schedule;

/// Campaigns for a lease on a thread and a connection of its own, and
/// calls back when this process starts and stops leading. Construct (which
/// validates), then start() (like client-go's NewLeaderElector, then Run),
/// so callbacks may use the object; the destructor stops.
///
/// Guarantees:
/// - Renewal never waits for application work: it has its own thread and
///   its own session (elector_config::connection); leader work runs on
///   another thread (on_started_leading) and on the application's own
///   connections.
/// - A leader steps down no later than its local deadline: leading() and
///   the term's stop_token turn false/stopped by the clock alone, even if
///   a call is stuck; on_stopped_leading follows as soon as the elector's
///   thread gets back, and it does not wait for a blocked call: a renew is
///   bounded by the renew deadline (cancelled then, the connection dropped
///   if the cancel does not land), an acquire by acquire_timeout.
/// - After a lost connection the elector reconnects and leads on only if a
///   renew of the same epoch succeeds before the renew deadline.
/// - A fence rejection seen by run_fenced() ends the term at once, and so
///   does a fenced transaction that a takeover ended after the lease ran out
///   (lease_evicted).
/// - stop() (and the destructor) ends the term, waits for
///   on_started_leading to return, releases the lease (release_on_stop),
///   calls on_stopped_leading, and joins the threads. With
///   preferred_successor set it hands the lease over instead, as yield_to().
/// - yield_to() (planned handover) stops the work first: the stop_token is
///   signalled, on_started_leading returns and on_stopped_leading is
///   called, and only then does lease_handover commit; the successor cannot
///   lead before this term's work is over, and this epoch's writes are
///   refused from that commit on.
///
/// Unlike client-go's elector, which does not fence (a paused leader can
/// still write after a new one was elected), work done with run_fenced() is
/// refused by the server once another epoch was granted.
///
/// @code
///   pglease::elector_config cfg;
///   cfg.lease_name = "billing-worker";
///   cfg.callbacks.on_started_leading = [&](std::int64_t, pglease::stop_token stop) {
///       while (!stop.wait_for(std::chrono::seconds{1}))
///           elector->run_fenced(app, [](pqxx::transaction_base& tx) { tx.exec("..."); });
///   };
///   cfg.callbacks.on_stopped_leading = [] { std::puts("not leading"); };
///   pglease::elector e{cfg};
///   elector = &e;
///   e.start();                 // campaigns until stop() or destruction
/// @endcode
class elector {
public:
    /// Validates @p config (config_error); will campaign over a pq_backend
    /// built from config.connection once start() is called. No I/O yet.
    explicit elector(elector_config config);

    /// The same over an injected backend and clock (tests); the clock must
    /// be the one @p db measures its waits with.
    elector(elector_config config, std::unique_ptr<backend> db, const clock& clk = system_clock());

    /// The same with injected backends for config.downstreams (tests), one
    /// per entry, in order.
    elector(elector_config config, std::unique_ptr<backend> db, const clock& clk,
            std::vector<std::unique_ptr<backend>> downstreams);

    /// stop().
    ~elector();
    /// Never copied or moved: its threads keep its address.
    elector(const elector&) = delete;
    elector& operator=(const elector&) = delete;
    elector(elector&&) = delete;
    elector& operator=(elector&&) = delete;

    /// Starts campaigning on the elector's thread. Idempotent; no effect
    /// after stop().
    void start();

    /// Ends the term (if any), releases, calls on_stopped_leading, joins.
    /// Idempotent. Must not be called from a callback (it would wait for
    /// the callback itself).
    void stop() noexcept;

    /// True while this process leads (and before the local deadline). No I/O.
    [[nodiscard]] bool leading() const noexcept { return m_election.leading(); }

    /// The epoch of the current (or last) term; 0 before the first.
    [[nodiscard]] std::int64_t epoch() const noexcept { return m_election.current().epoch(); }

    /// The identity last seen holding the lease.
    [[nodiscard]] std::string leader() const { return m_election.leader(); }

    [[nodiscard]] const std::string& identity() const noexcept { return m_config.identity; }
    [[nodiscard]] const std::string& lease_name() const noexcept { return m_config.lease_name; }

    /// The current term's fencing token. Throws lease_lost when not leading.
    [[nodiscard]] fence_token token() const;

    /// Runs @p fn(tx) fenced by the current epoch on @p conn (an
    /// application connection, not the elector's). Throws lease_lost before
    /// any I/O when not leading; a fence_rejected from the server ends the
    /// term at once (report_lost) and is rethrown.
    ///
    /// A transaction that fails because the session was terminated (57P01,
    /// a broken connection) or its statement cancelled (57014) after this
    /// term's lease ran out (leading() false: past the local deadline) was
    /// evicted by another holder's takeover: it is thrown as lease_evicted
    /// (a lease_lost; nothing committed) and the term ends at once, as for
    /// fence_rejected. While still leading, such failures are not evictions:
    /// connection_lost (reconnect and retry) or the error as it came.
    ///
    /// Bounded as lease::run_fenced(): it returns or throws by about 0.5 s
    /// after the term's local deadline + fenced_grace (moved by renewals),
    /// even on a frozen server: lease_evicted when cut before COMMIT was
    /// sent, commit_unknown when cut during COMMIT.
    template <typename F>
    auto run_fenced(pqxx::connection& conn, F&& fn) {
        const fence_token t = token();
        try {
            return detail::run_fenced_bounded(conn, t, m_election.current().fenced_bound(t.epoch),
                                              std::forward<F>(fn));
        } catch (const lease_lost&) {
            report_lost(t.epoch);
            throw;
        } catch (const error& e) {
            if (!detail::is_eviction(e) || (leading() && epoch() == t.epoch))
                throw;
            report_lost(t.epoch);
            detail::throw_evicted(e, t);
        }
    }

    /// Planned handover (like Kubernetes' coordinated leader election with a
    /// preferred successor): ends this term now and grants the lease to
    /// @p successor, normally another elector campaigning with that identity,
    /// which leads at once with the new epoch (it wakes on the handover
    /// NOTIFY; no wait for the ttl). In order: the stop_token is signalled,
    /// on_started_leading returns, on_stopped_leading is called, then
    /// lease_handover commits. Blocks until done: the work's return (as
    /// stop()), then one call bounded by the connection's call_timeout.
    /// Afterwards this elector campaigns on as a follower.
    ///
    /// The successor is not checked: if no live elector campaigns with that
    /// identity, the lease sits with it until its ttl runs out, and then any
    /// candidate (this one too) takes it over with a new epoch. Safety is
    /// unaffected (nobody writes with the handed-over epoch); only the
    /// lease is unavailable for up to one ttl. Use identities that the
    /// successor really runs with (elector_config::identity).
    ///
    /// Returns handed_over (new_epoch), not_leading (nothing done: not in a
    /// term, not started, or stopped), not_ours (lease_handover returned
    /// NULL: this term had already lost the lease; on_stopped_leading was
    /// called anyway) or failed (outcome unknown; a release was tried).
    /// Throws config_error for an invalid @p successor or this elector's own
    /// identity, and error when called from a callback (it would wait for
    /// itself) or while another yield_to() is in progress.
    handover_result yield_to(const std::string& successor);

    /// What the last handover (yield_to() or the preferred_successor on
    /// stop) did; nullopt if none was tried. After stop() this tells whether
    /// preferred_successor got the lease.
    [[nodiscard]] std::optional<handover_result> last_handover() const;

    /// Tells the elector that the grant with @p epoch is gone (e.g. the
    /// application saw LS001/LS002 on its own): the term ends now.
    void report_lost(std::int64_t epoch) noexcept;

private:
    void run() noexcept;
    void dispatch(const std::vector<election_event>& events);
    void start_term(std::int64_t epoch);
    void end_term();
    void join_worker() noexcept;
    handover_result hand_over(const std::string& successor, bool release_on_failure);
    void serve_yield();
    /// A verified handover request (the listener's thread): served by the
    /// loop as a yield_to() nobody waits for.
    void handover_requested(const std::string& requester);
    /// elector_config::request_handover: asks the holder when due; when to wake.
    [[nodiscard]] clock::time_point ask_for_handover();

    /// A yield_to() waiting for the elector's thread.
    struct yield_request {
        std::string successor;
        std::promise<handover_result> done;
    };

    elector_config m_config;
    const clock& m_clock;
    /// Where handover requests are sent and heard: the elector's own
    /// server; empty with an injected backend (no handover requests then).
    std::string m_handover_conninfo;
    std::unique_ptr<backend> m_db;
    std::vector<std::unique_ptr<backend>> m_downstreams; ///< config.downstreams'
    election m_election;
    mutable std::mutex m_mutex; ///< guards m_source
    std::optional<stop_source> m_source;
    std::optional<yield_request> m_yield;           ///< guarded by m_mutex
    std::optional<handover_result> m_last_handover; ///< guarded by m_mutex
    bool m_accepting_yields = false;                ///< guarded by m_mutex: the loop runs
    std::atomic<std::thread::id> m_worker_id{};     ///< the current term's worker
    std::thread m_worker;
    std::atomic<bool> m_work_failed{false};

    // Handover requests (pglease/internal/handover_request.hpp); the elector's
    // thread only.
    std::unique_ptr<handover_listener> m_handover_listener;   ///< during a term
    std::unique_ptr<handover_requester> m_handover_requester; ///< before the first term
    std::unique_ptr<handover_schedule> m_handover_schedule;
    bool m_led = false; ///< a term has started: request_handover asks no more

    std::unique_ptr<detail::loop_thread>
        m_loop; ///< the campaign loop; last: joined before the members it uses go
};

} // namespace pglease
