/// @file group_member.hpp
/// @brief A member of a lease group: balanced, fenced ownership of many
/// shards among the live members, in the background.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/error.hpp"
#include "pglease/group_config.hpp"

#include "pglease/internal/clock.hpp"
#include "pglease/internal/fenced_grant.hpp"
#include "pglease/internal/stop_token.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pglease {

namespace detail {
class loop_thread;
} // namespace detail
class group_state;
struct group_event;

/// Joins a group and owns the shards that the assignment gives it, like
/// Kafka's consumer groups or Knative's bucketed leases, but with every
/// shard a pg_lease lease, so work fenced by a shard's epoch is refused
/// by the database once the shard moved on. Construct (which validates),
/// then start(); the destructor stops.
///
/// How it works (group_state has the steps): each member holds a
/// membership lease; every member reads the group's leases, takes the valid
/// membership leases as the live members, and computes the same assignment
/// of the shards (assign_shards(): rendezvous hashing with bounded loads).
/// A member acquires the shards assigned to it when they are free or
/// expired, and gives up the ones assigned elsewhere gracefully: it signals
/// the shard's stop_token, waits for on_shard_started to return, calls
/// on_shard_stopped, and only then releases the lease, so the new owner
/// starts after the old owner's work ended. One lease_renew_many per
/// renewal cycle renews the membership and every shard held. NOTIFY
/// pg_lease wakes every member on joins, leaves and releases; expiries
/// (a member that died) are noticed at the expiry the server reported, and
/// a poll every retry period catches anything else.
///
/// Guarantees:
/// - A shard is granted to one member at a time, whatever the members'
///   views (each grant is lease_acquire's compare-and-swap), and
///   run_fenced() writes carry the shard's epoch, so the fence refuses a
///   member that lost the shard while paused.
/// - Renewals never wait for shard work (threads of their own) and every
///   call is bounded; a shard's stop_token reads as stopped from its local
///   deadline on, even if the member's thread is stuck in a call.
/// - After a join, a leave or a death the assignment converges within
///   about 2 x ttl (a death: the dead member's leases must expire first;
///   a join or leave: a few round trips plus the time shard work takes to
///   stop).
///
/// @code
///   pglease::group_config cfg;
///   cfg.group = "orders";
///   cfg.shards = pglease::numbered_shards("orders", 256);
///   cfg.callbacks.on_shard_started = [&](const std::string& shard, std::int64_t,
///                                        pglease::stop_token stop) {
///       while (!stop.wait_for(std::chrono::seconds{1}))
///           member->run_fenced(shard, conn_for(shard), [&](pqxx::work& tx) { ... });
///   };
///   pglease::group_member m{cfg};
///   member = &m;
///   m.start();
/// @endcode
class group_member {
public:
    /// Validates @p config (config_error); will run over @p db, or else a
    /// pq_backend built from config.connection, once start() is called. No
    /// I/O yet. An injected backend (tests, the test double) comes with the
    /// clock it measures its waits with.
    explicit group_member(group_config config, std::unique_ptr<backend> db = nullptr,
                          const clock& clk = system_clock());

    /// stop().
    ~group_member();
    /// Never copied or moved: its threads keep its address.
    group_member(const group_member&) = delete;
    group_member& operator=(const group_member&) = delete;
    group_member(group_member&&) = delete;
    group_member& operator=(group_member&&) = delete;

    /// Joins and works on the member's thread. Idempotent; no effect after
    /// stop().
    void start();

    /// Leaves: signals every shard's stop_token, waits for the shard work
    /// to return, releases the membership and each shard (release_on_stop),
    /// calls on_shard_stopped for each, and joins the threads. Idempotent.
    /// Not from a callback.
    void stop() noexcept;

    /// True while the membership lease is held. No I/O.
    [[nodiscard]] bool joined() const noexcept;

    /// True while this member holds @p shard's lease (before its local
    /// deadline), also while its work is being stopped. No I/O.
    [[nodiscard]] bool holds(const std::string& shard) const;

    /// The shards this member owns and is not giving up, sorted. No I/O.
    [[nodiscard]] std::vector<std::string> owned_shards() const;

    /// The live members of the last read of the group. No I/O.
    [[nodiscard]] std::vector<group_member_info> members() const;

    [[nodiscard]] const std::string& identity() const noexcept { return m_config.identity; }
    [[nodiscard]] const std::string& group() const noexcept { return m_config.group; }

    /// The fencing token of @p shard. Throws lease_lost when not held.
    [[nodiscard]] fence_token token(const std::string& shard) const;

    /// Runs @p fn(pqxx::work&) on @p conn (an application connection)
    /// fenced by @p shard's epoch, as lease::run_fenced(): lease_lost before
    /// any I/O when the shard is not held; a fence rejection or an eviction
    /// gives the shard up at once (its stop_token is signalled) and is
    /// rethrown.
    template <typename F>
    auto run_fenced(const std::string& shard, pqxx::connection& conn, F&& fn) {
        return detail::run_fenced_grant(
            grant(shard), [&] { return not_held(shard); }, *m_db, conn, std::forward<F>(fn));
    }

    /// Tells the member that the grant of @p shard with @p epoch is gone
    /// (e.g. the application saw LS001/LS002 on its own).
    void report_lost(const std::string& shard, std::int64_t epoch) noexcept;

private:
    /// The work of one shard term.
    struct work {
        std::int64_t epoch = 0;
        stop_source source;
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
        std::shared_ptr<std::atomic<bool>> failed = std::make_shared<std::atomic<bool>>(false);
        bool stopping = false;
        shard_stop_reason reason = shard_stop_reason::moved;
    };

    [[nodiscard]] std::string not_held(const std::string& shard) const;
    [[nodiscard]] std::shared_ptr<lease> grant(const std::string& shard) const;
    void run() noexcept;
    void dispatch(const std::vector<group_event>& events);
    void start_work(const std::string& shard, std::int64_t epoch);
    void reap() noexcept;
    void update_deadlines();

    group_config m_config;
    const clock& m_clock;
    std::unique_ptr<backend> m_db;
    std::unique_ptr<group_state> m_state;
    mutable std::mutex m_mutex; ///< guards m_work's stop sources
    std::map<std::string, work> m_work;
    std::unique_ptr<detail::loop_thread> m_loop; ///< last: joined before the members it uses go
};

} // namespace pglease
