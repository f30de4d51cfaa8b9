/// @file store_state.hpp
/// @brief Internal: the shared state of a lease_store and its sessions.
#pragma once

#include "pglease/testing/lease_store.hpp"
#include "pglease/testing/manual_clock.hpp"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace pglease::testing::detail {

/// A session's wait_for_change() as the store sees it.
struct waiter {
    std::string name;                             ///< the lease it waits for
    bool prefix = false;                          ///< name is a prefix (wait_for_prefix)
    std::set<std::string> any;                    ///< wait_for_free: these names, not name
    clock::time_point until{};                    ///< when it wakes at the latest
    bool listening = false;                       ///< LISTEN pg_lease done
    std::size_t cursor = 0;                       ///< events before this index were seen
    bool interrupted = false;                     ///< interrupt() pending
    bool waiting = false;                         ///< blocked in wait_for_change() now
    std::uint64_t entries = 0;                    ///< times it entered wait_for_change()
    std::thread::id thread;                       ///< the thread of its last wait
    std::chrono::steady_clock::time_point left{}; ///< real time it last left a wait
};

/// Rows, event log, waiters; one mutex for all (mutable: status() is const).
struct store_state {
    explicit store_state(const pglease::clock* external)
        : clk{external != nullptr ? *external : own} {}

    manual_clock own;
    const pglease::clock& clk;
    mutable std::mutex mutex;
    std::condition_variable changed; ///< rows, events, time, interrupts
    std::condition_variable settled; ///< a waiter entered a wait
    std::map<std::string, lease_row> rows;
    std::vector<std::string> log;       ///< lease names of NOTIFY events
    std::vector<bool> freed;            ///< per event: a release or revoke
    std::vector<std::string> handed_to; ///< per event: a handover's successor, else empty
    std::int64_t counter = 100;         ///< the last epoch issued
    std::map<std::uint64_t, waiter> waiters;
    std::uint64_t next_session = 0;
    static constexpr std::chrono::milliseconds busy_window{200};

    [[nodiscard]] bool owns_clock() const noexcept { return &clk == &own; }
    [[nodiscard]] bool valid(const lease_row& r) const noexcept {
        return !r.holder.empty() && clk.now() < r.expires;
    }
    /// True when an event for w.name was logged at or after w.cursor.
    [[nodiscard]] bool has_event(const waiter& w) const noexcept;
    /// True when w's wait should end now (caller holds the mutex).
    [[nodiscard]] bool due(const waiter& w) const noexcept;
    /// Logs an event on @p name (@p freed: a release or revoke; @p successor:
    /// a handover's) and wakes the waiters (caller holds it).
    void notify(const std::string& name, bool freed = false, const std::string& successor = {});
    /// Grants @p name to @p holder (new epoch unless it holds it already;
    /// a new grant records @p lock_delay).
    std::int64_t grant(const std::string& name, const std::string& holder,
                       std::chrono::milliseconds ttl,
                       std::chrono::milliseconds lock_delay = std::chrono::milliseconds::zero());
    /// When @p holder may be granted @p r, which nobody validly holds: a
    /// grant lost without release keeps every other holder out until its
    /// lock delay has passed (pg_lease's rule).
    [[nodiscard]] clock::time_point available_at(const lease_row& r,
                                                 const std::string& holder) const noexcept {
        if (r.lock_delay == std::chrono::milliseconds::zero() || r.holder == holder)
            return r.expires;
        return r.expires + r.lock_delay;
    }
    /// Waits until every background loop that is due or busy now (it left
    /// its last wait, on a thread other than the caller's, less than
    /// busy_window ago) has entered a new wait, is gone, or has been out of
    /// its wait for busy_window (a loop that stopped, e.g. a stopped
    /// elector whose session still exists); at most @p timeout of real
    /// time. Caller holds @p lock.
    bool settle(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout);
};

} // namespace pglease::testing::detail
