/// @file backend.hpp
/// @brief The narrow seam between the lease state machines and SQL.
///
/// Like client-go's resourcelock.Interface, a backend does one round trip per
/// call and keeps no lease state of its own. pq_backend speaks to the
/// pg_lease extension over libpqxx; the tests use an in-memory fake with an
/// injected clock. A backend is used by one thread at a time, except
/// interrupt(), which any thread may call.
#pragma once

#include "pglease/internal/clock.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pglease {

/// The answer of an acquire call (SQL: lease_acquire).
struct acquire_reply {
    /// True when the caller holds the lease now (granted or extended).
    bool acquired = false;
    /// The grant of record: the caller's epoch when acquired, else the
    /// current holder's epoch.
    std::int64_t epoch = 0;
    /// The current holder (the caller when acquired); empty when free.
    std::string holder;
    /// Time left until the grant of record expires, measured by the server
    /// when it answered (expires_at - clock_timestamp()); nullopt if unknown.
    std::optional<std::chrono::microseconds> remaining;
};

/// One row of lease_status, as the server reports it.
struct lease_record {
    std::string name;
    std::string holder; ///< empty when free
    std::int64_t epoch = 0;
    bool valid = false;                     ///< held and unexpired on the server's clock
    std::chrono::microseconds remaining{0}; ///< 0 when not valid
};

/// The operations the state machines need, one round trip each. Every call
/// is bounded in time by the implementation (connection_options'
/// call_timeout, acquire_timeout); acquire() and renew() are also bounded by
/// the @p deadline the caller passes, the time left before its own deadline
/// (clock::time_point::max(): only the implementation's bound). A call that
/// reaches its bound fails (it does not hang): error with SQLSTATE 57014
/// when the statement was cancelled, connection_lost when the connection had
/// to be dropped. Failures are thrown as pglease::error subclasses
/// (connection_lost when the session broke: the next call reconnects).
class backend {
public:
    backend() = default;
    backend(const backend&) = delete;
    backend& operator=(const backend&) = delete;
    virtual ~backend() = default;

    /// lease_acquire(name, holder, ttl, lock_delay): grant or extend, or
    /// report the holder (or, while a lost grant's lock delay runs, the
    /// holder of that grant and when the delay ends). A new grant records
    /// @p lock_delay (zero: lease_acquire(name, holder, ttl), which every
    /// extension version has). Returns or fails by @p deadline (on the
    /// backend's clock).
    virtual acquire_reply acquire(const std::string& name, const std::string& holder,
                                  std::chrono::milliseconds ttl,
                                  std::chrono::milliseconds lock_delay,
                                  clock::time_point deadline) = 0;

    /// acquire() without a lock delay.
    acquire_reply acquire(const std::string& name, const std::string& holder,
                          std::chrono::milliseconds ttl, clock::time_point deadline) {
        return acquire(name, holder, ttl, std::chrono::milliseconds::zero(), deadline);
    }

    /// lease_renew(name, holder, epoch, ttl): the time left after the
    /// renewal, or nullopt when the caller no longer holds that epoch.
    /// Returns or fails by @p deadline (on the backend's clock).
    virtual std::optional<std::chrono::microseconds>
    renew(const std::string& name, const std::string& holder, std::int64_t epoch,
          std::chrono::milliseconds ttl, clock::time_point deadline) = 0;

    /// lease_release(name, holder, epoch): true if this call freed the lease.
    virtual bool release(const std::string& name, const std::string& holder,
                         std::int64_t epoch) = 0;

    /// lease_revoke(name): frees the lease whoever holds it (administrators).
    virtual bool revoke(const std::string& name) = 0;

    /// lease_handover(name, holder, epoch, successor): grants the lease to
    /// @p successor with a new epoch if (holder, epoch) is the unexpired
    /// grant of record; the new epoch, or nullopt when it was not. Bounded
    /// like release(). The default throws error (a backend without it, e.g.
    /// an older test double), so adding it breaks no implementation.
    virtual std::optional<std::int64_t> handover(const std::string& name, const std::string& holder,
                                                 std::int64_t epoch, const std::string& successor);

    /// The lease_status row for @p name, or nullopt when there is none.
    virtual std::optional<lease_record> status(const std::string& name) = 0;

    /// Subscribes to lease events (LISTEN pg_lease). Idempotent. Returns
    /// false when events are unavailable: callers then wake only at the
    /// expiry they know of (documented degradation, not an error).
    virtual bool listen() = 0;

    /// Ends what listen() began (UNLISTEN pg_lease), bounded like a call.
    /// A listening session is sent every lease event of its database: a
    /// holder that waits for none stops them this way. Idempotent; never
    /// throws (a session that breaks meanwhile listens no more either).
    /// Default: nothing (a backend without events).
    virtual void unlisten() noexcept;

    /// Blocks until an event for @p name arrives (true), @p until passes, or
    /// interrupt() is called (false). @p until is on the backend's clock.
    /// Never throws: a session that breaks during the wait ends it at once
    /// (false; the next call reconnects), and without a session it simply
    /// sleeps until @p until.
    virtual bool wait_for_change(const std::string& name, clock::time_point until) noexcept = 0;

    /// Wakes a wait_for_change() in progress (or the next one). Thread-safe.
    virtual void interrupt() noexcept = 0;

    /// True, once, when the events this backend received since the last
    /// call end with a handover of lease @p name to @p holder (NOTIFY
    /// pg_lease, event "handover"): that waiter may then confirm its grant
    /// with status(), a read, instead of acquire(), which writes and waits
    /// for a durable commit. Only a hint (any role may NOTIFY): it never
    /// stands for a grant. Default: false (no events).
    virtual bool take_handover_hint(const std::string& name, const std::string& holder) noexcept;

    /// status(@p name) for a waiter that such a hint told of its grant, only
    /// where a commit that others see is durable: nullopt when the server
    /// has a synchronous standby (a commit whose wait for it was cancelled
    /// is seen before it is replicated, and a failover could lose it; the
    /// waiter then acquires, a write that waits for the standby itself).
    /// Bounded like status(). Default: nullopt.
    virtual std::optional<lease_record> status_if_durable(const std::string& name);

    // --- many leases at once (lease groups); the defaults are correct but
    // --- slower, so a backend that cannot do better need not override them.

    /// lease_renew_many(names, holder, epochs, ttl): renew() of each lease,
    /// in one round trip where the backend can; the result has one entry
    /// per name, in order (nullopt: that epoch is not the caller's any
    /// more). Returns or fails by @p deadline. Default: renew() per lease.
    virtual std::vector<std::optional<std::chrono::microseconds>>
    renew_many(const std::vector<std::string>& names, const std::string& holder,
               const std::vector<std::int64_t>& epochs, std::chrono::milliseconds ttl,
               clock::time_point deadline);

    /// lease_acquire(name, holder, ttl, lock_delay) for each of @p names, in
    /// one round trip (one statement, one commit) where the backend can; one
    /// reply per name, in order. Callers pass the names sorted, so that
    /// statements locking many rows lock them in one order (no deadlock
    /// between two sets). Returns or fails by @p deadline. Default:
    /// acquire() per lease.
    virtual std::vector<acquire_reply> acquire_many(const std::vector<std::string>& names,
                                                    const std::string& holder,
                                                    std::chrono::milliseconds ttl,
                                                    std::chrono::milliseconds lock_delay,
                                                    clock::time_point deadline);

    /// acquire_many() without a lock delay.
    std::vector<acquire_reply> acquire_many(const std::vector<std::string>& names,
                                            const std::string& holder,
                                            std::chrono::milliseconds ttl,
                                            clock::time_point deadline) {
        return acquire_many(names, holder, ttl, std::chrono::milliseconds::zero(), deadline);
    }

    /// lease_release(name, holder, epoch) for each lease, in one round trip
    /// where the backend can; one entry per name, in order (true: this call
    /// freed it). Returns or fails by @p deadline (and the backend's bound
    /// for calls that may wait for a takeover, as acquire_many: a release
    /// ends the grant's fenced transactions too). Default: release() per
    /// lease.
    virtual std::vector<bool> release_many(const std::vector<std::string>& names,
                                           const std::string& holder,
                                           const std::vector<std::int64_t>& epochs,
                                           clock::time_point deadline);

    /// Every lease_status row whose name starts with @p prefix (one round
    /// trip), ordered by name. Default: throws error (not supported).
    virtual std::vector<lease_record> list(const std::string& prefix);

    /// As wait_for_change(), but woken by an event for any lease whose name
    /// starts with @p prefix. Default: wait_for_change(prefix, until), which
    /// sees only the lease named exactly @p prefix (callers then wake at
    /// @p until: the documented degradation without events).
    virtual bool wait_for_prefix(const std::string& prefix, clock::time_point until) noexcept;

    /// As wait_for_change(), but woken only when a lease in @p names was
    /// released or revoked (it is free now; a grant, takeover or handover
    /// to another holder does not wake it): a lease_set waiting for its
    /// wanted leases is not woken by every grant of a busy server.
    /// True when woken so; @p freed then lists the names freed (empty:
    /// unknown which, e.g. events were missed while reconnecting).
    /// Default: sleeps until @p until or interrupt() (the documented
    /// degradation without events).
    virtual bool wait_for_free(const std::set<std::string>& names, clock::time_point until,
                               std::vector<std::string>& freed) noexcept;

    // --- downstream fences (extension 1.4) ---------------------------------

    /// lease_store_id(): this database's identity as a lease store, which
    /// downstream databases name the lease's floor by. Read once per
    /// connection (again after a reconnect), bounded by @p deadline.
    /// Default: throws error (not supported).
    virtual std::string store_id(clock::time_point deadline);

    /// lease_raise(store, name, epoch) in this (downstream) database: raises
    /// the floor of (store, name) to @p epoch once the open fenced
    /// transactions of lower tokens there ended. True when the floor is now
    /// @p epoch, false when it was already higher. May wait up to the
    /// server's pg_lease.takeover_timeout (plus ending them): bounded like
    /// acquire(), and by @p deadline. Default: throws error (not supported).
    virtual bool raise(const std::string& store, const std::string& name, std::int64_t epoch,
                       clock::time_point deadline);

protected:
    backend(backend&&) = default;
    backend& operator=(backend&&) = default;

    /// The *_many calls' argument check: one epoch per name, else
    /// invalid_argument naming @p call.
    static void require_epoch_per_name(const char* call, const std::vector<std::string>& names,
                                       const std::vector<std::int64_t>& epochs);
};

} // namespace pglease
