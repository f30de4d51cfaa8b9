/// @file lease.hpp
/// @brief One named lease: acquire, wait, renew, release, and the local
/// deadline that held() answers from.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/lease_options.hpp"

#include "pglease/internal/clock.hpp"
#include "pglease/internal/fence_token.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>

#include <pqxx/connection> // run_fenced() is in fence.hpp

namespace pglease {

/// One named lease, seen from one holder identity.
///
/// Guarantees:
/// - held() does no I/O and is true only before the local deadline:
///   steady time when the last successful acquire/renew request was *sent*
///   + ttl - safety margin. Whatever the network or the process was doing
///   (a SIGSTOP, a stalled call), held() is false from the deadline on.
/// - A grant is believed only after a successful call: a call whose outcome
///   is unknown (connection lost) never extends the deadline, and after a
///   reconnect the lease is held again only once renew() of the same epoch
///   succeeds.
/// - mark_lost() (also called when a fenced write is refused) makes held()
///   false at once, and a renew that was already in flight cannot undo it.
///
/// Threads: acquire(), acquire_for(), renew() and release() must not run
/// concurrently with each other; held(), epoch(), deadline(), holder() and
/// mark_lost() may be called from any thread at any time.
///
/// Like a pqxx transaction on its connection, a lease refers to its backend
/// and clock, which must outlive it.
///
/// @code
///   pglease::pq_backend db{{}};
///   pglease::lease job{db, "nightly-report"};
///   if (job.acquire_for(std::chrono::seconds{30})) {
///       job.run_fenced(app_conn, [](pqxx::transaction_base& tx) { tx.exec("..."); });
///       job.release();
///   }
/// @endcode
class lease {
public:
    /// Validates @p name and @p options (throws config_error); no I/O.
    lease(backend& db, std::string name, lease_options options = {},
          const clock& clk = system_clock());
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    lease(lease&&) = delete;
    lease& operator=(lease&&) = delete;
    ~lease() = default;

    /// One try (one round trip). True when this identity holds the lease
    /// now: granted with a new epoch, or extended with the same epoch if it
    /// already held it. When false, holder() and expiry_hint() tell who holds
    /// it and until when. Throws connection_lost and other errors.
    ///
    /// After a NOTIFY pg_lease told this object's backend of a handover to
    /// this identity (backend::take_handover_hint), the try is a read of
    /// lease_status instead: the grant is taken as the server reports it,
    /// the local deadline counted from the read's send time and the time
    /// left it reported (never later than the grant's expiry), with no
    /// durable commit of our own on the handover's path. If the read does
    /// not show the grant as ours, or the server has a synchronous standby
    /// (a commit seen may not be replicated yet), the acquire follows.
    ///
    /// The call returns or fails by @p deadline (default: only the backend's
    /// acquire bound, connection_options::acquire_timeout, 5 s by default,
    /// long enough for the server to end a stalled old holder's fenced
    /// transactions before it grants an expired lease).
    [[nodiscard]] bool acquire(clock::time_point deadline = clock::time_point::max());

    /// Applies the reply to an acquire of this lease that the caller sent
    /// itself at @p sent (its clock read before sending) and received at
    /// @p arrived, in a batch with other leases (lease_set acquires many in
    /// one round trip). Exactly what acquire() does with its own reply:
    /// returns whether this identity holds the lease now.
    bool apply_acquire(clock::time_point sent, clock::time_point arrived,
                       const acquire_reply& reply);

    /// Waits up to @p timeout for the lease. Between tries it sleeps until a
    /// NOTIFY pg_lease event for this lease (release, revoke, grant), the
    /// expiry the server reported, or the timeout: no busy polling. Without
    /// LISTEN it wakes only at the expiry (or after retry_period following
    /// an error). Returns held().
    [[nodiscard]] bool acquire_for(std::chrono::milliseconds timeout);

    /// One renew of the current epoch. True: the deadline moved forward.
    /// False: the server says this epoch is no longer ours (held() is false
    /// from now on). Throws connection_lost etc. when the outcome is unknown;
    /// the deadline is then unchanged.
    ///
    /// The call returns or fails by the earlier of @p deadline and the local
    /// deadline, if that is still ahead (and by the backend's call_timeout):
    /// a renew that cannot finish while the lease is still held is cut off,
    /// so the caller can step down in time instead of waiting for it. A
    /// renew whose @p deadline has passed fails (error) without being sent.
    [[nodiscard]] bool renew(clock::time_point deadline = clock::time_point::max());

    /// Applies the answer to a renew of @p epoch that the caller sent itself
    /// at @p sent, in a batch with other leases (lease_renew_many; a lease
    /// group renews all its shards in one round trip). @p before is what
    /// deadline() returned just before sending. @p renewed false: the
    /// server says the epoch is not ours (held() false from now on). True:
    /// the deadline moves to @p sent + ttl - safety margin, unless the
    /// lease was lost meanwhile (mark_lost(), another grant) or was not
    /// held at @p before. Returns whether the deadline moved.
    bool apply_renewal(clock::time_point sent, clock::time_point before, std::int64_t epoch,
                       bool renewed) noexcept;

    /// Stops claiming the lease (held() false at once), then frees it on the
    /// server. True if the server freed it; false if it was not ours any
    /// more. No-op (false) if this object never held a grant. A call that
    /// fails with connection_lost (the session broke; the next call
    /// reconnects) is made again, release_tries calls in all, while the
    /// grant may still be valid on the server (before the last successful
    /// request's send time + ttl); then the error is thrown.
    bool release();

    /// Calls release() makes at most when the session keeps breaking.
    static constexpr int release_tries = 3;

    /// Planned handover: stops claiming the lease (held() false at once),
    /// then lease_handover() grants it to @p successor with a new epoch; the
    /// successor's next acquire() (woken by the NOTIFY) confirms it with a
    /// read. The new epoch,
    /// or nullopt when this epoch was no longer the unexpired grant of record
    /// (nothing changed) or this object never held a grant. Throws like
    /// release() when the outcome is unknown. Stop this grant's fenced work
    /// first: from the commit on, its writes are refused (LS001).
    std::optional<std::int64_t> hand_over(const std::string& successor);

    /// Makes held() false now, e.g. after a fence rejection. Thread-safe.
    void mark_lost() noexcept;

    /// True before the local deadline of a grant that was not lost. No I/O.
    [[nodiscard]] bool held() const noexcept;

    /// The epoch of the last grant this object received (0 if none). It is
    /// kept after the lease is lost, for diagnostics.
    [[nodiscard]] std::int64_t epoch() const noexcept { return m_epoch.load(); }

    /// The local deadline (clock::time_point::min() when not held).
    [[nodiscard]] clock::time_point deadline() const noexcept;

    /// Send time of the last successful acquire/renew (min() if none).
    [[nodiscard]] clock::time_point renewed_at() const noexcept;

    /// The holder the server last reported (this identity when held; empty
    /// when free or not asked yet).
    [[nodiscard]] std::string holder() const;

    /// Local estimate of when the grant of record expires: arrival time of
    /// the last acquire reply + the time left that the server reported. It
    /// is never earlier than the real expiry, so a follower can sleep until
    /// it. nullopt if unknown.
    [[nodiscard]] std::optional<clock::time_point> expiry_hint() const;

    /// The token of the current grant. Throws lease_lost when not held().
    [[nodiscard]] fence_token token() const;

    /// run_fenced() with token(): throws lease_lost before any I/O when not
    /// held(); on fence_rejected calls mark_lost() and rethrows. A
    /// transaction ended while the lease is no longer held() (terminated:
    /// 57P01 or a broken connection; cancelled: 57014) was evicted by a
    /// takeover: it is thrown as lease_evicted (and mark_lost() called).
    /// While held(), a broken connection stays connection_lost.
    ///
    /// Bounded: at the local deadline + fenced_grace (1 s), moved forward by
    /// the renewals of this epoch that succeed meanwhile, whatever is still
    /// running is cancelled, and its socket shut down if that does not end
    /// it within 200 ms, so the call returns or throws by about 0.5 s after
    /// that: lease_evicted (nothing committed) when cut before COMMIT was
    /// sent, commit_unknown when cut during COMMIT. See pglease::run_fenced()
    /// for @p fn and the transaction (fenced_work when @p fn takes one).
    /// Defined in pglease/fence.hpp (include it to call this), so that
    /// holding a lease does not pull libpqxx in.
    template <typename F>
    auto run_fenced(pqxx::connection& conn, F&& fn);

    /// The time bound of run_fenced() for grant @p epoch: the local
    /// deadline + fenced_grace, asked again when it comes (a renewal of
    /// @p epoch moves it); the deadline so far once the grant is gone.
    [[nodiscard]] detail::fence_bound fenced_bound(std::int64_t epoch) const;

    [[nodiscard]] const std::string& name() const noexcept { return m_name; }
    [[nodiscard]] const std::string& identity() const noexcept { return m_options.identity; }
    [[nodiscard]] const lease_options& options() const noexcept { return m_options; }
    /// Schema for fence tokens (set by owners that know it, e.g. elector).
    void set_schema(std::string schema) { m_schema = std::move(schema); }

private:
    using rep = clock::duration::rep;
    static constexpr rep lost = std::numeric_limits<rep>::min();

    [[nodiscard]] rep deadline_after(clock::time_point sent) const noexcept;
    /// After a NOTIFY told of a handover to this identity: one read of
    /// lease_status (backend::status_if_durable); if the server says this
    /// identity holds the lease, its epoch is taken with the local deadline
    /// at the read's send time + the time left the server reported - safety
    /// margin (no write). False when it does not, or too little is left:
    /// acquire() then asks as usual.
    bool confirm_handover();

    backend& m_db;
    const clock& m_clock;
    std::string m_name;
    lease_options m_options;
    std::string m_schema;
    std::atomic<rep> m_deadline{lost};
    std::atomic<rep> m_renewed_at{lost};
    std::atomic<std::int64_t> m_epoch{0};
    mutable std::mutex m_mutex; ///< guards m_holder, m_expiry_hint
    std::string m_holder;
    std::optional<clock::time_point> m_expiry_hint;
};

} // namespace pglease
