/// @file checker.hpp
/// @brief Checks one phase's recorded history (bundle.hpp) against the
/// invariants and the phase's floors.
///
/// Invariant names (the `invariant` of a violation, the keys of the
/// report's `violations`):
///  - I1: no epoch is granted twice (per lease and epoch, to whoever:
///    another identity, or the same one after its grant had ended), and
///    grants of a lease carry increasing epochs, in commit and in real time;
///  - I2: no fenced write commits when its epoch is not the grant of record;
///  - I2d: in a downstream database, no write with a token below a floor
///    commits after that floor's raise (the downstream phase);
///  - I3: acknowledged writes are present; refused, failed and rolled-back
///    work is absent, and a transaction's statements are all or nothing;
///  - I4: no two processes observe held() at one instant (what the client
///    library told them, not a model);
///  - I5: a renew never revives an expired lease;
///  - I6: a leader's long fenced transaction keeps its lease and commits, and
///    one stopped inside until its lease was taken over never commits;
///  - liveness: no lease is without a leader, while a candidate campaigns,
///    for longer than ttl + retry x jitter + takeover + margin, measured from
///    the old grant's expiry (or from the end of a fault that took the
///    server away);
///  - floor: the phase did less than its minimum work (floors.hpp).
#pragma once

#include "bundle.hpp"

#include <map>
#include <string>
#include <vector>

namespace fault {

/// Per fault kind; observations are attributed to the fault injected last
/// before them (on the same lease), or to "baseline".
struct kind_stats {
    int planned = 0;
    int effective = 0;
    long grants = 0;            ///< epochs granted (first acknowledged acquire)
    long acked = 0;             ///< fenced transactions acknowledged
    long refused = 0;           ///< fenced writes the fence refused (LS001/LS002)
    long unknown = 0;           ///< commit outcome unknown
    long acked_lost = 0;        ///< counted also where allowed (async failover)
    long callback_overlaps = 0; ///< started..stop-token intervals overlapping (not I4)
    long allowed_overlaps = 0;  ///< I4 overlaps where allowed (clock steps, async failover)
    double longest_leaderless_ms = 0;
    std::vector<double> recovery_ms;        ///< injection to next successful acquire/renew
    std::vector<double> stepdown_ms;        ///< injection to the leader's stop token firing
    long by_read = 0;                       ///< grants confirmed by a read (handovers)
    std::vector<double> handover_ms;        ///< yield_to's call to the successor's grant
    std::map<std::string, long> violations; ///< per invariant
    std::map<std::string, int> notes;       ///< injection details
};

struct violation {
    std::string invariant;
    std::string text; ///< with the history of the lease around it
};

struct phase_report {
    std::map<std::string, kind_stats> kinds;
    std::vector<violation> violations;  ///< the first few, with their stories
    std::map<std::string, long> counts; ///< every violation, per invariant
};

/// Checks the invariants and the floors of @p b.
phase_report check_bundle(const phase_bundle& b);

/// The liveness bound of @p b in ns (ttl + retry x 1.2 + takeover + margin).
std::int64_t liveness_bound_ns(const phase_bundle& b);

} // namespace fault
