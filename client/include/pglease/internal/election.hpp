/// @file election.hpp
/// @brief The elector's state machine, single-threaded and clock-driven, so
/// tests can run it step by step with a fake backend and a fake clock.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/elector_config.hpp"
#include "pglease/lease.hpp"

#include "pglease/internal/clock.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace pglease {

/// Why a term ended.
enum class step_down_reason {
    lost,           ///< renew refused, fence rejection, or local deadline passed
    renew_deadline, ///< no successful renew within renew_deadline
    resigned,       ///< resign() (elector stopped, or leader work failed)
};

/// Something the owner of an election must act on.
struct election_event {
    /// term_refused: a grant that did not become a term (a downstream floor
    /// could not be raised in time); the lease was released.
    enum class kind { started_leading, stopped_leading, new_leader, term_refused };
    kind what = kind::new_leader;
    std::int64_t epoch = 0;                           ///< started/stopped/refused: the epoch
    std::string identity;                             ///< new_leader: who leads now
    std::string why;                                  ///< term_refused: what failed
    step_down_reason reason = step_down_reason::lost; ///< stopped_leading only
};

/// One candidate's view of the election for one lease. step() does what is
/// due now (at most one round trip) and returns the events it caused;
/// next_step() says when to call it again. Calling step() earlier (e.g. on a
/// NOTIFY) is always safe. The elector runs this on its thread; tests call
/// it directly. Not thread-safe except leading(), epoch(), leader() and the
/// lease's own thread-safe accessors.
class election {
public:
    /// @p config must be valid (see elector_config::validate()); it is copied.
    /// @p db and
    /// @p clk must outlive this object. @p seed seeds the retry jitter.
    /// @p downstreams: the backends of config.downstreams, in order (they
    /// must outlive this object too); their floors are raised before a
    /// term starts.
    election(backend& db, const elector_config& config, const clock& clk,
             std::uint64_t seed = std::random_device{}(), std::vector<backend*> downstreams = {});

    /// Does what is due: renew (leader) or try to acquire (follower).
    std::vector<election_event> step();

    /// Ends the term now, if leading: marks the lease lost and, if
    /// @p release, frees it on the server (errors ignored: it then expires).
    std::vector<election_event> resign(bool release);

    /// When step() should run next, on the election's clock.
    [[nodiscard]] clock::time_point next_step() const noexcept { return m_next; }

    /// True during a term and before the lease's local deadline. No I/O.
    [[nodiscard]] bool leading() const noexcept { return m_leading.load() && m_lease.held(); }

    /// True between started_leading and stopped_leading events.
    [[nodiscard]] bool in_term() const noexcept { return m_leading.load(); }

    /// The identity last seen holding the lease (empty if none seen).
    [[nodiscard]] std::string leader() const;

    /// The lease this election campaigns for.
    [[nodiscard]] lease& current() noexcept { return m_lease; }
    [[nodiscard]] const lease& current() const noexcept { return m_lease; }

private:
    void end_term(std::vector<election_event>& events, step_down_reason why);
    /// Raises the floor of every downstream to the new grant's epoch;
    /// what failed, or empty.
    [[nodiscard]] std::string raise_downstreams();
    void refuse_term(std::vector<election_event>& events, const std::string& why);
    void observe(std::vector<election_event>& events, const std::string& holder);
    [[nodiscard]] clock::duration jittered_retry();

    elector_config m_config;
    const clock& m_clock;
    backend& m_db;
    lease m_lease;
    std::vector<backend*> m_downstreams;
    /// No acquire before this, whatever wakes the loop: after a refused
    /// term (a NOTIFY, such as the refusal's own release, must not make a
    /// candidate spin grants), and after a resign without release, such as
    /// a handover (the successor holds the lease for a ttl; an acquire at
    /// the handover's NOTIFY would only meet the successor's first read).
    clock::time_point m_quiet_until{};
    std::mt19937_64 m_rng;
    std::atomic<bool> m_leading{false};
    clock::time_point m_next;
    mutable std::mutex m_mutex; ///< guards m_leader
    std::string m_leader;
};

} // namespace pglease
