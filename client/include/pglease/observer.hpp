/// @file observer.hpp
/// @brief Follows a lease without ever campaigning for it: holder, epoch,
/// expiry, and a callback on every change.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/observer_options.hpp"

#include "pglease/internal/clock.hpp"
#include "pglease/internal/lease_view.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace pglease {

namespace detail {
class loop_thread;
} // namespace detail

/// Follows one lease on a thread and a session of its own, like etcd's
/// Election.Observe: it reads lease_status, LISTENs on pg_lease, and reads
/// again on every notification for the lease (grant, release, revoke,
/// handover), at the expiry it knows (so an expiry without renewal is
/// reported, and a renewal, which sends no notification, moves the known
/// expiry without being a change), after every reconnect, and at least every
/// resync_period. It never acquires, renews or releases anything.
///
/// Readings are bounded calls (connection_options::call_timeout; see
/// pq_backend); a failed one marks the view stale and is retried after
/// retry_period on a new session. Changes between two readings are
/// coalesced: the observer reports states, not every event (lease_events
/// has the full history).
///
/// @code
///   pglease::observer_options o;
///   o.lease_name = "billing-worker";
///   o.on_change = [](pglease::lease_change c, const pglease::lease_view& v) {
///       std::cout << pglease::to_string(c) << " " << v.holder << " " << v.epoch << "\n";
///   };
///   pglease::observer watch{o};
///   watch.start();
///   bool leader_known = watch.current().valid;   // no I/O
/// @endcode
class observer {
public:
    /// Validates @p options (config_error); no I/O until start().
    explicit observer(observer_options options);
    /// The same over an injected backend and clock (tests, the test double).
    observer(observer_options options, std::unique_ptr<backend> db,
             const clock& clk = system_clock());
    /// stop().
    ~observer();
    /// Never copied or moved: its threads keep its address.
    observer(const observer&) = delete;
    observer& operator=(const observer&) = delete;
    observer(observer&&) = delete;
    observer& operator=(observer&&) = delete;

    /// Starts following on the observer's thread. Idempotent; no effect
    /// after stop().
    void start();
    /// Stops and joins. Idempotent; not from on_change.
    void stop() noexcept;

    /// The latest view. No I/O; thread-safe.
    [[nodiscard]] lease_view current() const;

    /// Blocks until a change after version @p since is reported (default:
    /// the version at the call) and returns that view, or nullopt after
    /// @p timeout (or on stop()). Thread-safe.
    [[nodiscard]] std::optional<lease_view>
    wait_for_change(std::chrono::milliseconds timeout,
                    std::optional<std::uint64_t> since = std::nullopt) const;

    [[nodiscard]] const std::string& lease_name() const noexcept { return m_options.lease_name; }

private:
    void run() noexcept;
    /// One reading; returns when to read next.
    clock::time_point read();
    void publish(lease_view next);

    observer_options m_options;
    const clock& m_clock;
    std::unique_ptr<backend> m_db;
    mutable std::mutex m_mutex; ///< guards m_view
    mutable std::condition_variable m_changed;
    lease_view m_view;
    std::unique_ptr<detail::loop_thread> m_loop; ///< last: joined before the members it uses go
};

} // namespace pglease
