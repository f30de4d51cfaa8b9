/// @file term_table.hpp
/// @brief Internal (used by the holders' headers, not an API): the terms of
/// a holder of many leases (lease_set_state, group_state) and the part of
/// its step that every such holder does the same way.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/lease.hpp"
#include "pglease/lease_options.hpp"

#include "pglease/internal/clock.hpp"
#include "pglease/internal/holder_config.hpp"
#include "pglease/internal/stop_token.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pglease::detail {

/// Why a term ended, in the engine's words; each holder names them its own
/// way (lease_loss, shard_stop_reason).
enum class term_end {
    lost,           ///< no longer held: refused, marked lost, local deadline passed
    renew_deadline, ///< no successful renewal within renew_deadline
    dropped,        ///< the holder no longer wants it (removed, moved): released
    stopped,        ///< the holder stops: released with release_on_stop
    failed,         ///< the term's work failed to start: released, then rests
};

/// A holder's own name for each term_end, in term_end's order.
template <typename Reason>
using term_end_names = std::array<Reason, 5>;

template <typename Reason>
[[nodiscard]] Reason name_of(term_end why, const term_end_names<Reason>& names) {
    return names.at(static_cast<std::size_t>(why));
}

/// A term that ended (or, from release_done(), was forgotten).
struct ended_term {
    std::string name;
    std::int64_t epoch = 0;
    term_end why = term_end::lost;
};

/// The terms of one holder, by lease name, and what happens to them the
/// same way in every holder of many leases:
///
/// - a term begins with a grant and a stop_source whose tokens read as
///   stopped from the grant's local deadline on (moved at each renewal);
/// - renew(): ONE lease_renew_many for every lease with a term (running,
///   or ended but not released yet) and the holder's own extra leases; a
///   lease the server refuses ends at once;
/// - give_up(): a term whose renewals failed for renew_deadline ends,
///   before its local deadline (step down as the elector does);
/// - an ended term is forgotten once its work is done (work_done()): those
///   dropped, failed or stopped with release_on_stop are released in ONE
///   release_many, retried on a broken session within the renew deadline;
///   a failed one rests a while before it may be acquired again;
/// - no call outlasts the renew deadline of anything held (call_bound()).
///
/// Threads: everything on the holder's thread, except the queries marked
/// thread-safe.
class term_table {
public:
    /// @p db, @p clk and @p config (the holder's, valid) must outlive this.
    term_table(backend& db, const clock& clk, const holder_config& config)
        : m_db{db}
        , m_clock{clk}
        , m_config{config}
        , m_options{config.to_lease_options()} {}

    /// A new lease @p lease_name of the holder's identity, ttl and schema,
    /// not acquired yet (a term begins with it once it is).
    [[nodiscard]] std::shared_ptr<lease> make_grant(const std::string& lease_name) const;

    /// A term of @p name begins with @p grant (just acquired): the token of
    /// its stop_source. The next renewal is due renew_interval() after it.
    stop_token begin(const std::string& name, std::shared_ptr<lease> grant);

    /// Steps 1-3 of every holder of many leases, in order: running terms
    /// no longer held locally end (lost), those @p dropped says are no
    /// longer wanted end (dropped), those whose work failed (work_failed())
    /// end (failed); when due, one renew round trip for every lease with a
    /// term and the held ones of @p extra (renew_if_due()); then give_up().
    void end_due(const std::vector<lease*>& extra,
                 const std::function<bool(const std::string&)>& dropped,
                 std::vector<ended_term>& out);

    /// The work of @p name's running term (with @p epoch; 0: any) failed
    /// to start: end_due() ends it.
    void work_failed(const std::string& name, std::int64_t epoch = 0);

    /// Ends @p name's running term (none: no effect), adding it to @p out.
    void end(const std::string& name, term_end why, std::vector<ended_term>& out);

    /// Ends every running term that @p ends says to, with @p why.
    void end_where(const std::function<bool(const std::string&)>& ends, term_end why,
                   std::vector<ended_term>& out);

    /// Ends every running term (a holder stopping): what ended.
    [[nodiscard]] std::vector<ended_term> end_all(term_end why);

    /// Ends every running term no longer held locally (lost).
    void end_unheld(std::vector<ended_term>& out);

    /// When due, one renew round trip for every lease with a term and the
    /// held ones of @p extra (the holder's own, e.g. a group membership).
    /// Terms the server refused end (lost).
    void renew_if_due(const std::vector<lease*>& extra, std::vector<ended_term>& out);

    /// Running terms whose renewals failed for renew_deadline end.
    void give_up(std::vector<ended_term>& out);

    /// The work of @p name's ended term (with @p epoch; 0: any) is done.
    /// False when there is no such ended term.
    bool work_done(const std::string& name, std::int64_t epoch = 0);

    /// Forgets the ended terms whose work is done, releasing those that
    /// are to be released (one round trip); with @p all_together, only once
    /// every ended term's work is done (a holder stopping: one release for
    /// all). A failed term's name rests for a retry period. Returns what
    /// was forgotten.
    std::vector<ended_term> release_done(bool all_together);

    /// The next renewal is due no later than @p when.
    void renew_by(clock::time_point when) noexcept;

    /// No call may outlast the local deadline or the renew deadline of a
    /// held lease with a term, nor those of @p extra (when held).
    [[nodiscard]] clock::time_point call_bound(const lease* extra = nullptr) const;

    /// When the table needs a step: a forgotten-ready term (now), a running
    /// term's local or renew deadline, the next renewal while anything is
    /// held, the end of a rest.
    [[nodiscard]] clock::time_point next_due() const;

    [[nodiscard]] clock::time_point next_renew() const noexcept { return m_next_renew; }

    /// @p name has a term (running or ended). Holder's thread.
    [[nodiscard]] bool has(const std::string& name) const { return m_terms.count(name) > 0; }

    /// @p name's running term, if any: its grant (nullptr otherwise).
    /// Holder's thread.
    [[nodiscard]] const lease* running(const std::string& name) const;

    /// @p name rests after a failed term (not to be acquired yet).
    [[nodiscard]] bool resting(const std::string& name) const;

    [[nodiscard]] bool empty() const noexcept { return m_terms.empty(); }

    /// The names whose term runs and whose grant is held (live()), sorted. Thread-safe.
    [[nodiscard]] std::vector<std::string> live_names() const;

    /// How many names are live(). Thread-safe.
    [[nodiscard]] std::size_t live_count() const;

    /// True while @p name's term runs and its grant is held. Thread-safe.
    [[nodiscard]] bool live(const std::string& name) const;

    /// The epoch of @p name while live(), else 0. Thread-safe.
    [[nodiscard]] std::int64_t live_epoch(const std::string& name) const;

    /// The grant of @p name's term, running or ended (nullptr: none).
    /// Thread-safe.
    [[nodiscard]] std::shared_ptr<lease> grant(const std::string& name) const;

    /// Successful renew and release round trips so far. Thread-safe.
    [[nodiscard]] std::uint64_t renew_rounds() const noexcept { return m_renews.load(); }
    [[nodiscard]] std::uint64_t release_rounds() const noexcept { return m_releases.load(); }

    /// Send to reply of the last successful renew round trip. Thread-safe.
    [[nodiscard]] clock::duration last_renew_latency() const noexcept {
        return clock::duration{m_renew_latency.load()};
    }

    /// What an acquire leaves of a renew deadline for the renewal that
    /// waits behind it: four renew round trips, at least min_renew_reserve,
    /// at most a quarter of the renew deadline (renewals slowed down by a
    /// loaded server must not stop every acquire).
    [[nodiscard]] clock::duration renew_reserve() const noexcept {
        return std::clamp<clock::duration>(
            4 * last_renew_latency(), min_renew_reserve,
            std::max<clock::duration>(m_config.renew_deadline / 4, min_renew_reserve));
    }
    static constexpr std::chrono::milliseconds min_renew_reserve{50};

private:
    struct term {
        term(std::shared_ptr<lease> g, const clock& clk)
            : grant{std::move(g)}
            , stop{clk} {}
        std::shared_ptr<lease> grant;
        stop_source stop;
        term_end why = term_end::lost;
        bool ended = false;
        bool work_done = false;
        bool release = false; ///< release once the work is done
    };

    void end_term(const std::string& name, term& t, term_end why, std::vector<ended_term>& out);
    [[nodiscard]] bool is_live(const term& t) const noexcept { return !t.ended && t.grant->held(); }
    void release(const std::vector<std::string>& names, const std::vector<std::int64_t>& epochs,
                 clock::time_point bound);

    backend& m_db;
    const clock& m_clock;
    const holder_config& m_config;
    const lease_options m_options;

    mutable std::mutex m_mutex; ///< guards m_terms' shape and each term's `ended`
    std::map<std::string, term> m_terms;
    std::map<std::string, clock::time_point> m_rest;            ///< failed terms' names, until
    std::vector<std::pair<std::string, std::int64_t>> m_failed; ///< for end_due()

    std::atomic<std::uint64_t> m_renews{0};
    std::atomic<std::uint64_t> m_releases{0};
    std::atomic<clock::duration::rep> m_renew_latency{0};
    clock::time_point m_next_renew = clock::time_point::max();
};

} // namespace pglease::detail
