/// @file lease_store.hpp
/// @brief An in-memory pg_lease "server" for unit tests: the SQL semantics
/// of lease_acquire/renew/release/revoke/handover and the fence check, a
/// controllable clock, and backend sessions for lease, elector and
/// scoped_lease.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/fence.hpp"

#include "pglease/internal/clock.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pglease::testing {

namespace detail {
struct store_state;
} // namespace detail

class store_session;

/// One lease row as the store keeps it (for assertions).
struct lease_row {
    std::string holder; ///< empty when free (released, revoked, or no row)
    std::int64_t epoch = 0;
    clock::time_point expires{};      ///< on the store's clock
    std::chrono::milliseconds ttl{0}; ///< of the latest grant or renew
    /// Of the latest grant: after it is lost without release, others wait
    /// this long past its expiry (or revocation); release sets it to 0.
    std::chrono::milliseconds lock_delay{0};
};

/// An in-memory lease store with pg_lease's semantics (SPEC section 3):
/// grants of a free or expired lease get a new, larger epoch; renew keeps
/// it and never revives an expired grant; release/revoke keep the epoch;
/// grants, releases, revokes and handovers wake the sessions that listen,
/// as NOTIFY pg_lease does. Everything is thread-safe.
///
/// Time: built without a clock, the store owns a manual_clock and time moves
/// only by advance(); built with system_clock() it runs in real time (use
/// short ttls). connect() gives a backend session to hand to a lease, an
/// elector or a scoped_lease; build them with clock() as their clock.
///
/// Scripting (what a user's test says): mark_held() "this process holds
/// it", mark_held_elsewhere() "someone else holds it", revoke() / expire()
/// "the lease was lost", advance() "time passes". Each of these returns
/// only after the background loops it woke (an elector's thread) have
/// reacted and are waiting again (settle()).
///
/// Limits: no SQL and no pqxx connection. Fenced work goes through
/// fence_check() or testing::run_fenced() (run_fenced.hpp) instead of
/// pglease::run_fenced(); there are no transactions, evictions, lock
/// delays, lost connections or bounded calls (for those, see the
/// project's integration tests).
///
/// @code
///   pglease::testing::lease_store store;
///   pglease::elector e{cfg, store.connect(), store.clock()};
///   store.mark_held(cfg.lease_name, cfg.identity);   // e leads once this returns
///   store.advance(cfg.ttl);                          // renewed on schedule: still leads
///   store.mark_held_elsewhere(cfg.lease_name);       // e steps down at its next renew
/// @endcode
class lease_store {
public:
    /// A store on its own manual clock (time moves only by advance()).
    lease_store();
    /// A store on @p clk (e.g. pglease::system_clock() for real time),
    /// which must outlive the store and its sessions. advance() is refused.
    explicit lease_store(const pglease::clock& clk);
    ~lease_store();
    lease_store(const lease_store&) = delete;
    lease_store& operator=(const lease_store&) = delete;
    lease_store(lease_store&&) = delete;
    lease_store& operator=(lease_store&&) = delete;

    /// The store's clock: give it to the lease, elector or scoped_lease.
    [[nodiscard]] const pglease::clock& clock() const noexcept;

    /// A new session (as one database connection), listening on request
    /// like pq_backend. It shares the store's state, so it may outlive
    /// this object.
    [[nodiscard]] std::unique_ptr<backend> connect();

    // --- scripting --------------------------------------------------------

    /// Time passes: moves the store's own clock forward by @p d, stopping at
    /// every point a session waits for (an elector's next renew or retry)
    /// and letting that loop run before going on, so background renewals
    /// happen on schedule. Throws std::logic_error on an external clock.
    void advance(clock::duration d);

    /// "This process holds the lease": grants @p name to @p identity now
    /// with a new epoch (the same epoch if @p identity already holds it),
    /// whoever held it before, and wakes listeners. An elector or lease with
    /// that identity holds it after its next acquire (an elector's is
    /// prompted by the event). Returns the epoch.
    std::int64_t mark_held(const std::string& name, const std::string& identity,
                           std::chrono::milliseconds ttl = std::chrono::seconds{15});

    /// "Someone else holds it": mark_held() for another identity. The
    /// process's own grant (if any) is over: its renewals return NULL and
    /// its fenced work is refused with LS001.
    std::int64_t mark_held_elsewhere(const std::string& name,
                                     const std::string& identity = "someone-else",
                                     std::chrono::milliseconds ttl = std::chrono::seconds{15});

    /// "The lease was lost", as lease_revoke(): frees it whoever holds it
    /// (epoch kept) and wakes listeners. True if it was held.
    bool revoke(const std::string& name);

    /// "The lease expired" on the server: the grant of record ends now
    /// (holder and epoch kept, as when the ttl runs out; no event, as on
    /// the real server). True if it was valid. The holder notices at its
    /// next renew (or its own local deadline): advance() to get there.
    bool expire(const std::string& name);

    /// Waits (real time, at most @p timeout) until every background loop
    /// woken by the last change (or busy when called) is waiting again; a
    /// loop out of its wait for 200 ms counts as stopped. The scripting
    /// calls do it already.
    /// True when settled in time.
    bool settle(std::chrono::milliseconds timeout = std::chrono::seconds{2});

    /// Waits (real time, at most @p timeout) until at least @p sessions
    /// sessions are blocked in wait_for_change() with nothing due: the
    /// background loops (an elector just started) did what they had to and
    /// sleep. True when they are.
    bool wait_until_waiting(std::size_t sessions = 1,
                            std::chrono::milliseconds timeout = std::chrono::seconds{2});

    // --- the fence --------------------------------------------------------

    /// Throws fence_rejected exactly when pg_lease's fence trigger would
    /// refuse a write carrying @p token: LS001 when the lease's current
    /// epoch is another, LS002 when it is this epoch but the lease was
    /// released, revoked or has expired. Returns when the write would pass.
    void fence_check(const fence_token& token) const;

    // --- the SQL functions (what sessions call; tests may call them too) --

    [[nodiscard]] acquire_reply acquire(const std::string& name, const std::string& holder,
                                        std::chrono::milliseconds ttl,
                                        std::chrono::milliseconds lock_delay);
    [[nodiscard]] acquire_reply acquire(const std::string& name, const std::string& holder,
                                        std::chrono::milliseconds ttl) {
        return acquire(name, holder, ttl, std::chrono::milliseconds::zero());
    }
    [[nodiscard]] std::optional<std::chrono::microseconds> renew(const std::string& name,
                                                                 const std::string& holder,
                                                                 std::int64_t epoch,
                                                                 std::chrono::milliseconds ttl);
    bool release(const std::string& name, const std::string& holder, std::int64_t epoch);
    /// lease_handover(): the successor's new epoch, or nullopt.
    std::optional<std::int64_t> handover(const std::string& name, const std::string& holder,
                                         std::int64_t epoch, const std::string& successor);
    [[nodiscard]] std::optional<lease_record> status(const std::string& name) const;
    /// The status of every row whose name starts with @p prefix, by name.
    [[nodiscard]] std::vector<lease_record> list(const std::string& prefix) const;

    /// The row as it is (a default row when there is none).
    [[nodiscard]] lease_row row(const std::string& name) const;

private:
    friend class store_session;
    /// Another view of @p state, for a session: its calls do not settle().
    explicit lease_store(std::shared_ptr<detail::store_state> state) noexcept
        : m_state{std::move(state)}
        , m_settles{false} {}

    void settle_after_change(std::unique_lock<std::mutex>& lock);

    std::shared_ptr<detail::store_state> m_state;
    bool m_settles = true;
};

} // namespace pglease::testing
