/// @file checker.hpp
/// @brief Reads the database and the workers' histories of one phase and
/// checks I1..I4 (SPEC section 1) and liveness.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fault {

/// One injected fault, as the nemesis recorded it.
struct fault_record {
    std::string kind;   ///< row of the table, e.g. "pause", "kill"
    std::string lease;  ///< lease whose leader was hit; empty: all leases
    std::int64_t t = 0; ///< CLOCK_MONOTONIC ns when the fault began
    std::string detail;
};

/// Per fault kind; the phase's observations are attributed to the fault
/// that was injected last before them (on the same lease).
struct kind_stats {
    int injections = 0;
    long stale_refused = 0;   ///< writes the fence refused (LS001/LS002)
    long stale_accepted = 0;  ///< I2 violations
    long acked_lost = 0;      ///< I3: acknowledged, absent at the end
    long refused_present = 0; ///< I3: refused or failed, present at the end
    long reissued = 0;        ///< I1 violations
    long overlaps = 0;        ///< I4: belief (reply .. local deadline) overlaps
    long overlaps_send = 0;   ///< I4 with beliefs from the request's send time
    long unknown = 0;         ///< writes with unknown outcome
    long no_recovery = 0;     ///< no leader within the liveness window
    std::vector<double> recovery_ms;
    std::map<std::string, int> notes; ///< free-form counters (e.g. terminate states)
};

/// What a phase allows.
struct phase_expectations {
    bool lost_acks_allowed = false; ///< async failover: acknowledged writes may be lost
    bool overlaps_allowed = false;  ///< server clock stepped: I4 not assumed
};

/// What the checker reads from the database of one phase.
struct db_event {
    std::int64_t id = 0, epoch = 0, ord = 0;
    std::string event, lease, holder;
};
struct db_write {
    std::string lease, worker;
    std::int64_t seq = 0, epoch = 0, ord = 0;
};

struct phase_report {
    std::map<std::string, kind_stats> kinds;
    std::vector<std::string> violations; ///< each with the minimal history around it
};

/// Reads lease_events (+ grant_order) and every fw_<lease> table (+
/// commit_order) from @p conninfo.
void read_database(const std::string& conninfo, const std::vector<std::string>& leases,
                   std::vector<db_event>& events, std::vector<db_write>& writes);

/// Checks one phase.
phase_report check_phase(const std::string& phase, const std::vector<nlohmann::json>& history,
                         const std::vector<db_event>& events, const std::vector<db_write>& writes,
                         const std::vector<fault_record>& faults, int ttl_ms, int retry_ms,
                         const phase_expectations& expect);

} // namespace fault
