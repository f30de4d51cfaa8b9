/// @file lease_set_state.hpp
/// @brief The state of a lease_set, single-threaded and clock-driven like
/// group_state, so tests can run it step by step over the test double's
/// store and a manual clock.
#pragma once

#include "engine/term_table.hpp"
#include "pglease/backend.hpp"
#include "pglease/lease.hpp"
#include "pglease/lease_set_config.hpp"

#include "pglease/internal/clock.hpp"
#include "pglease/internal/stop_token.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace pglease {

/// Something the owner of a lease_set_state must act on.
struct lease_set_event {
    enum class kind {
        acquired, ///< a term of @c name began with @c epoch: call on_acquired(@c stop)
        lost,     ///< that term ended (@c why): call on_lost, then callback_done()
    };
    kind what = kind::acquired;
    std::string name;
    std::int64_t epoch = 0;
    stop_token stop;                   ///< acquired only
    lease_loss why = lease_loss::lost; ///< lost only
};

/// Many leases held by one identity. step() does what is due now and
/// returns the events it caused; next_step() says when to call it again;
/// calling it earlier is always safe. Each step, in this order:
///
///  1. terms no longer held locally (deadline passed, mark_lost), no longer
///     wanted (remove()) or whose on_acquired threw (work_failed()) end;
///  2. when due, ONE lease_renew_many renews every lease with a term
///     (running, or ended but not released yet); a lease the server refuses
///     (NULL) ends at once;
///  3. terms whose renewals failed for renew_deadline end (step down before
///     the local deadline, as the elector does);
///  4. ended terms whose on_lost returned (callback_done()) are forgotten,
///     and those removed, failed or stopped are released: ONE release_many for all
///     of them (at stop(): once every on_lost returned, so one in all);
///  5. when due (add(), the retry period, the earliest expiry the server
///     reported for a lease held elsewhere), ONE acquire_many tries every
///     wanted lease without a term; before that, ONE acquire_many tries
///     those an event said were freed (lease_freed()); each one granted
///     begins a term. An acquire ends by the next renewal of what is held
///     (a cancelled batch is server work lost). A grant counts from the
///     send: a batch answered after its send + renew_deadline - renew
///     reserve could not be renewed in time, so none of it begins a term;
///     its rows are this identity's on the server, and they are asked for
///     again at once (the server extends them, same epoch). At most
///     acquire_batch() names go in one: halved when a batch fails or is
///     not answered within renew_interval (a server too loaded to grant
///     them all at once), doubled again when one is answered within a
///     quarter of it; the next batch follows at once. A lease refused
///     there (another holder has it) keeps waits_for_others() true until
///     it is granted or removed: the owner listens for events only then.
///
/// A term's stop_token is signalled when it ends, and reads as stopped from
/// its local deadline on by itself. A lease is never believed held past
/// send time of its last successful acquire/renew + ttl - safety margin,
/// which is before its expiry on the server. Steps 1-4 are the engine's
/// (detail::term_table), as in every holder of many leases.
///
/// Threads: add(), remove(), step(), callback_done() and stop() on one
/// thread; the queries (held(), epoch(), held_names(), held_count(),
/// grant(), the round counters) from any thread.
class lease_set_state {
public:
    /// @p config must be valid (lease_set_config::validate()); it is copied.
    /// @p db and @p clk must outlive this object.
    lease_set_state(backend& db, const lease_set_config& config, const clock& clk,
                    std::uint64_t seed = std::random_device{}());

    /// Wants @p name (acquired at the next step). Throws config_error for
    /// an invalid lease name. No effect while it is wanted already.
    void add(const std::string& name);

    /// No longer wants @p name: its term (if any) ends (lease_loss::removed)
    /// and it is released after callback_done().
    void remove(const std::string& name);

    /// Does what is due (see the class comment).
    std::vector<lease_set_event> step();

    /// When step() should run next, on the state's clock.
    [[nodiscard]] clock::time_point next_step() const noexcept { return m_next; }

    /// The names wanted now (add()ed, not remove()d): the leases whose
    /// events (NOTIFY) should wake the owner. Same thread as step().
    [[nodiscard]] const std::set<std::string>& wanted() const noexcept { return m_wanted; }

    /// Wanted leases were released or revoked elsewhere (an event; empty:
    /// unknown which): the next step tries to acquire those of them that
    /// have no term here at once, in one round trip, rather than at the
    /// retry period or the expiry it knew of. The periodic acquire of every
    /// wanted lease keeps its schedule.
    void lease_freed(const std::vector<std::string>& names);

    /// True while a wanted lease without a term was refused at its last
    /// try (another holder has it): then, and only then, events can say
    /// it was freed, so the owner listens for them. False once stopping.
    [[nodiscard]] bool waits_for_others() const noexcept {
        return !m_stopping && !m_held_elsewhere.empty();
    }

    /// The on_acquired of @p name's term with @p epoch threw: the next step
    /// ends the term (lease_loss::failed), which is released after its
    /// on_lost returned, and @p name is not acquired again for a retry
    /// period (an event that frees it included), as an elector whose
    /// leader work failed resigns and campaigns again later.
    void work_failed(const std::string& name, std::int64_t epoch);

    /// The on_lost of @p name's term with @p epoch returned (or there is
    /// none): the next step forgets the term, releasing it if it was removed
    /// or stopped.
    void callback_done(const std::string& name, std::int64_t epoch);

    /// Stops acquiring; every term ends (lease_loss::stopped). Keep calling
    /// step() until stopped(): the leases are released in one round trip
    /// (release_on_stop) once each term's callback_done() came.
    std::vector<lease_set_event> stop();

    /// True once stop() finished: no term left.
    [[nodiscard]] bool stopped() const noexcept { return m_stopped; }

    /// True while @p name is held and its term has not ended (before its
    /// local deadline). Thread-safe, no I/O.
    [[nodiscard]] bool held(const std::string& name) const;

    /// The epoch of @p name while held(), else 0. Thread-safe, no I/O.
    [[nodiscard]] std::int64_t epoch(const std::string& name) const;

    /// The names held(), sorted. Thread-safe, no I/O.
    [[nodiscard]] std::vector<std::string> held_names() const;

    /// How many names are held(). Thread-safe, no I/O.
    [[nodiscard]] std::size_t held_count() const;

    /// The lease of @p name while it has a term (nullptr otherwise).
    /// Thread-safe; use its thread-safe members only (held(), token(),
    /// run_fenced(), mark_lost()).
    [[nodiscard]] std::shared_ptr<lease> grant(const std::string& name) const;

    /// Round trips so far, by kind (tests: one renew per renewal cycle).
    [[nodiscard]] std::uint64_t renew_rounds() const noexcept { return m_terms.renew_rounds(); }
    [[nodiscard]] std::uint64_t acquire_rounds() const noexcept { return m_acquires.load(); }
    [[nodiscard]] std::uint64_t release_rounds() const noexcept { return m_terms.release_rounds(); }

    /// The most names the next acquire_many sends (step 5). Same thread as
    /// step().
    [[nodiscard]] std::size_t acquire_batch() const noexcept { return m_acquire_batch; }
    /// Batches answered too late to begin terms (asked for again). Same
    /// thread as step().
    [[nodiscard]] std::uint64_t late_batches() const noexcept { return m_late_batches; }
    static constexpr std::size_t max_acquire_batch = std::numeric_limits<std::size_t>::max();

    /// Send to reply of the last successful renew round trip (zero before
    /// the first): the cycle cost to watch against ttl / 3. Thread-safe.
    [[nodiscard]] clock::duration last_renew_latency() const noexcept {
        return m_terms.last_renew_latency();
    }

    [[nodiscard]] const lease_set_config& config() const noexcept { return m_config; }

private:
    void end_term(std::vector<lease_set_event>& events, const detail::ended_term& e);
    void end_terms(std::vector<lease_set_event>& events, std::vector<detail::ended_term> ended);
    void acquire_wanted(std::vector<lease_set_event>& events);
    /// One acquire_many of @p names; false if it was not answered. Only a
    /// batch of the periodic acquire (@p sizes_batch) resizes the batch: a
    /// few freed leases that failed (a broken session) say nothing of it.
    bool acquire(std::vector<lease_set_event>& events, const std::vector<std::string>& names,
                 bool sizes_batch);
    void resize_batch(std::size_t sent, clock::duration took);
    void schedule();
    [[nodiscard]] bool acquirable(const std::string& name) const;
    [[nodiscard]] std::vector<std::string> unheld_wanted() const;

    lease_set_config m_config;
    backend& m_db;
    const clock& m_clock;
    std::mt19937_64 m_rng;
    detail::term_table m_terms;

    std::set<std::string> m_wanted;
    std::set<std::string> m_freed; ///< lease_freed(): acquire these at the next step
    /// Wanted, refused at the last try: held by another holder.
    std::set<std::string> m_held_elsewhere;

    std::atomic<std::uint64_t> m_acquires{0};
    std::size_t m_acquire_batch = max_acquire_batch;
    std::uint64_t m_late_batches = 0;
    bool m_stopping = false;
    bool m_stopped = false;
    clock::time_point m_next;
    clock::time_point m_next_acquire;
};

} // namespace pglease
