/// @file group_state.hpp
/// @brief One member's view of a lease group, single-threaded and
/// clock-driven like election, so tests can run it step by step over the
/// test double's store and a manual clock.
#pragma once

#include "engine/term_table.hpp"
#include "pglease/backend.hpp"
#include "pglease/group_config.hpp"
#include "pglease/lease.hpp"

#include "pglease/internal/clock.hpp"
#include "pglease/internal/group_assignment.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace pglease {

/// Something the owner of a group_state must act on.
struct group_event {
    enum class kind {
        shard_started,   ///< the member owns @c shard now, with @c epoch: start its work
        shard_stopping,  ///< stop the work of @c shard, then call work_stopped()
        members_changed, ///< the live members are now @c members
    };
    kind what = kind::members_changed;
    std::string shard;
    std::int64_t epoch = 0;
    shard_stop_reason reason = shard_stop_reason::moved; ///< shard_stopping only
    std::vector<group_member_info> members;              ///< members_changed only
};

/// One member of a lease group. step() does what is due now and returns
/// the events it caused; next_step() says when to call it again; calling it
/// earlier is always safe. Each step, in this order:
///
///  1. shards no longer held locally (deadline passed, mark_lost), or whose
///     work failed (work_failed()), stop;
///  2. when due, one lease_renew_many renews the membership lease and every
///     shard held (running or stopping);
///  3. leases whose renewals failed for renew_deadline are given up;
///  4. without a valid membership lease, the member joins (acquires it);
///  5. when due (request_scan(), a known expiry, the retry period), the
///     group's leases are read (one round trip): the live members are the
///     valid membership leases, and the assignment is recomputed from them;
///  6. shards assigned to another member stop (event shard_stopping);
///  7. shards whose work stopped (work_stopped()) are released (one round
///     trip for all), so the new owner can take them only after the old
///     owner's work ended;
///  8. shards assigned to this member that the last read showed free or
///     expired are acquired (event shard_started).
///
/// A shard is never granted to two members at once whatever their views
/// of the membership: each grant is lease_acquire's compare-and-swap, and
/// fenced writes carry the shard's epoch. Steps 1-3 and 7 are the
/// engine's (detail::term_table), as in every holder of many leases.
///
/// Threads: step(), request_scan(), work_stopped() and leave() on one
/// thread; the queries (holds(), grant(), owned(), members(), joined())
/// from any thread.
class group_state {
public:
    /// @p config must be valid (group_config::validate()); it is copied.
    /// @p db and @p clk must outlive this object.
    group_state(backend& db, const group_config& config, const clock& clk,
                std::uint64_t seed = std::random_device{}());

    /// Does what is due (see the class comment).
    std::vector<group_event> step();

    /// When step() should run next, on the state's clock.
    [[nodiscard]] clock::time_point next_step() const noexcept { return m_next; }

    /// Reads the group at the next step (an event on one of its leases).
    void request_scan() noexcept { m_scan_due = true; }

    /// The work of @p shard (after its shard_stopping event) has returned:
    /// the next step releases it, if still held and wanted.
    void work_stopped(const std::string& shard);

    /// The work of @p shard (on_shard_started) failed: the next step stops
    /// it (shard_stop_reason::failed); it is released after work_stopped()
    /// and not acquired again for a retry period, as an elector whose
    /// leader work failed resigns and campaigns again later.
    void work_failed(const std::string& shard);

    /// Stops acquiring and joining; every running shard stops (reason
    /// leaving). Keep calling step() until left(): each shard is released
    /// after its work_stopped(), the membership lease last.
    std::vector<group_event> leave();

    /// True once leave() finished: no shard left, membership released.
    [[nodiscard]] bool left() const noexcept { return m_left; }

    /// True while the membership lease is held. Thread-safe, no I/O.
    [[nodiscard]] bool joined() const noexcept { return m_member.held(); }

    /// True while this member holds @p shard's lease (running or stopping),
    /// before its local deadline. Thread-safe, no I/O.
    [[nodiscard]] bool holds(const std::string& shard) const;

    /// The lease of @p shard while this member has a term on it (nullptr
    /// otherwise). Thread-safe; use its thread-safe members only (held(),
    /// token(), run_fenced(), mark_lost()).
    [[nodiscard]] std::shared_ptr<lease> grant(const std::string& shard) const;

    /// The shards held and not stopping, sorted. Thread-safe.
    [[nodiscard]] std::vector<std::string> owned() const;

    /// The live members of the last read, sorted by identity. Thread-safe.
    [[nodiscard]] std::vector<group_member_info> members() const;

    /// The identity the assignment of the last read gives @p shard (empty
    /// when unknown).
    [[nodiscard]] std::string assigned_to(const std::string& shard) const;

    /// lease_renew_many round trips so far (tests: one per renewal cycle).
    [[nodiscard]] std::uint64_t renew_rounds() const noexcept { return m_shards.renew_rounds(); }

    /// "pglease:group/<group>/": the prefix of every lease of the group.
    [[nodiscard]] const std::string& prefix() const noexcept { return m_prefix; }

private:
    /// What the last read showed for a shard.
    struct shard_row {
        std::string holder;
        bool valid = false;
        clock::time_point expires{};
    };

    void stop_shards(std::vector<group_event>& events, std::vector<detail::ended_term> ended);
    void join();
    void scan(std::vector<group_event>& events);
    void stop_moved(std::vector<group_event>& events);
    void acquire_assigned(std::vector<group_event>& events);
    clock::time_point m_fresh_renew_asked{}; ///< the renewal a takeover last asked to follow
    void schedule();
    [[nodiscard]] bool assigned_here(const std::string& shard) const;
    [[nodiscard]] clock::duration jittered_retry();

    group_config m_config;
    backend& m_db;
    const clock& m_clock;
    std::string m_prefix;
    lease m_member;
    std::mt19937_64 m_rng;

    detail::term_table m_shards;

    mutable std::mutex m_mutex; ///< guards m_live, m_target (written here only)
    std::vector<group_member_info> m_live;
    std::map<std::string, std::string> m_target; ///< shard -> owner identity
    std::map<std::string, shard_row> m_rows;

    bool m_scan_due = true;
    bool m_leaving = false;
    bool m_left = false;
    clock::time_point m_next;
    clock::time_point m_next_scan;
    clock::time_point m_scan_wake = clock::time_point::max(); ///< a known expiry that matters
    clock::time_point m_join_retry;
    clock::time_point m_acquire_retry;
};

} // namespace pglease
