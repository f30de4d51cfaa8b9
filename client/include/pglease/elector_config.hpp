/// @file elector_config.hpp
/// @brief Configuration of pglease::elector, validated at construction.
#pragma once

#include "pglease/internal/holder_config.hpp"
#include "pglease/internal/stop_token.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pglease {

/// What the elector calls, like client-go's LeaderCallbacks.
struct elector_callbacks {
    /// Required. Called when this identity becomes leader, on a thread of its
    /// own (the renew thread never waits for it), with the epoch of the grant
    /// (the fencing token) and a stop_token that is signalled when this term
    /// ends: loss, fence rejection, renew deadline, stop(), or simply the
    /// local deadline passing. The function may run for the whole term; it
    /// must return promptly once the token is signalled, because the elector
    /// campaigns again (and stop() returns) only after it returned.
    std::function<void(std::int64_t epoch, stop_token stop)> on_started_leading;

    /// Required. Called once at the end of every term that started, however
    /// it ended (always called, even when on_started_leading threw), after
    /// the stop_token was signalled. Runs on the elector's thread.
    std::function<void()> on_stopped_leading;

    /// Optional. Called when the elector learns of a new leader identity
    /// (its own included), on the elector's thread.
    std::function<void(const std::string& identity)> on_new_leader;

    /// Optional. Called when a grant did not become a term because the
    /// floor of a downstream database (elector_config::downstreams) could
    /// not be raised before the local deadline: with the grant's epoch and
    /// what failed. The lease was released; the elector campaigns again
    /// after a retry period. On the elector's thread.
    std::function<void(std::int64_t epoch, const std::string& why)> on_term_refused;
};

/// Settings of an elector. Every field documents its default; validate()
/// (called by the elector's constructor) rejects inconsistent timings.
///
/// Timing, with the defaults (ttl 15 s, renew deadline 10 s, retry 2 s):
/// - The leader renews ttl / 3 after its last successful renew was sent
///   (5 s), retries failures every retry period, and steps down when
///   renew_deadline has passed since the last successful renew was sent
///   (10 s), which must come before the local deadline (ttl - safety margin
///   = 14 s), which comes before the server's expiry (>= 15 s). Hence
///   ttl - safety_margin > renew_deadline.
/// - renew_deadline > retry_period x jitter_factor, so at least one retry
///   fits between a failed renew and the step-down.
/// - Followers try again when NOTIFY pg_lease reports an event for the
///   lease, at the expiry the server reported, and at least every retry
///   period x [1, jitter_factor] (random, so followers do not stampede).
/// The shared fields (identity, the timings, release_on_stop, connection)
/// are holder_config's. The connection's acquire_timeout (default 5 s,
/// above the server's takeover_timeout) is kept as it is; a leader's renew
/// is also bounded by the renew deadline.
struct elector_config : holder_config {
    /// Required. Name of the lease to campaign for (1..255 bytes).
    std::string lease_name;

    /// Planned handover on a graceful stop: when set, stop() hands the lease
    /// to this identity (lease_handover) instead of releasing it, after the
    /// term's work has stopped and on_stopped_leading returned; an elector
    /// campaigning with that identity leads at once (woken by the handover
    /// NOTIFY). If nobody campaigns with it, the lease sits with that
    /// identity until its ttl runs out, then any candidate takes it over.
    /// The outcome is in elector::last_handover(); when the call fails, the
    /// lease is released (if release_on_stop). Default empty: release.
    std::string preferred_successor;

    /// Rolling deploys, the requester's side (`pglease run --take-over`):
    /// until its first term starts, while another identity holds the lease,
    /// ask it to hand the lease over (NOTIFY pg_lease_handover from a
    /// session of the elector's own that stays open while it waits): at once
    /// for each new holder, then after the retry period, doubling up to the
    /// ttl. A holder that answers stops its work and hands over; this
    /// elector then leads at once (woken by the handover NOTIFY). One that
    /// does not answer keeps the lease, and the elector waits as usual.
    /// Only before the first term, so two electors configured alike never
    /// hand the lease back and forth. Needs the elector's own connection
    /// (not an injected backend). Default false.
    bool request_handover = false;

    /// Rolling deploys, the holder's side (`pglease run` unless
    /// --no-handover): during a term, LISTEN for handover requests for the
    /// lease on a session of the elector's own (opened when the term starts,
    /// closed when it ends; its connect and checks never delay a renewal).
    /// A request counts only when its sending session is still connected
    /// and logged in as this elector's role or a superuser (the roles
    /// lease_handover() accepts); then the elector hands over as yield_to()
    /// does: the work stops, on_stopped_leading returns, lease_handover()
    /// commits; last_handover() has the outcome, and the elector campaigns
    /// on as a follower. Needs the elector's own connection (not an injected
    /// backend). Default true.
    bool answer_handover_requests = true;

    /// Downstream databases (extension 1.4 installed there) whose tables
    /// are fenced by this lease: lease_fence(tbl, lease, store =>
    /// lease_store_id() of the lease's database). At the start of every
    /// term, before on_started_leading, the elector raises the lease's
    /// floor in each (lease_raise, one round trip each, on a connection of
    /// its own per downstream), within the grant's local deadline; a raise
    /// waits there for the old leader's open transactions (at most the
    /// server's pg_lease.takeover_timeout, then ends them). If one cannot be
    /// raised in time, the term does not start: the lease is released at
    /// once, on_term_refused reports it, and the elector campaigns again
    /// after a retry period. Work whose downstream floors were not raised
    /// would write there unfenced against a paused old leader; releasing
    /// lets a candidate that can reach them lead instead. The role needs
    /// EXECUTE on lease_raise in each. Each raise is also bounded by the
    /// downstream's acquire_timeout; its connect ends by the same deadline,
    /// and the server ends the raise by then too (statement_timeout). Rule: ttl - safety margin
    /// must exceed each downstream's pg_lease.takeover_timeout plus the time to end a stalled
    /// writer (the defaults: 14 s against 1 s); otherwise a raise is cut off at the local deadline
    /// before it ends an old writer stalled there, and terms are refused until that writer ends.
    /// Default: none.
    std::vector<connection_options> downstreams;

    /// The callbacks; on_started_leading and on_stopped_leading are required.
    elector_callbacks callbacks;

    /// Throws config_error unless: lease_name valid; identity 1..255 bytes;
    /// ttl, renew_deadline, retry_period > 0; jitter_factor >= 1;
    /// ttl > renew_deadline; ttl - safety margin > renew_deadline;
    /// renew_deadline > retry_period x jitter_factor; both required
    /// callbacks set; preferred_successor empty, or 1..255 bytes and not
    /// identity.
    void validate() const;
};

} // namespace pglease
