/// @file bundle.hpp
/// @brief The recorded format of one phase: everything the checker reads
/// (parameters, the nemesis' faults, the database's lease events and
/// fenced rows, every worker's history), saved as one JSON file so a
/// failure can be rechecked (`--replay FILE`) and the self-test can feed
/// hand-made histories through the same path.
///
/// Times are CLOCK_MONOTONIC nanoseconds, shared by every process.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fault {

inline constexpr const char* bundle_format = "pglease-fault-history/1";

/// One injected fault, as the nemesis recorded it. Only effective
/// injections are recorded (an attempt without a target is retried).
struct fault_record {
    std::string kind;            ///< e.g. "pause", "kill", "failover-async"
    std::string lease;           ///< lease whose leader was hit; empty: all leases
    std::int64_t t = 0;          ///< when the fault began
    std::int64_t end = 0;        ///< when it ended (SIGCONT, server up again); = t if instant
    std::string detail;          ///< e.g. "2x ttl", "mid-renew", "+3s"
    std::string target;          ///< worker label hit, if any
    bool blocks_service = false; ///< no server while it lasted (crash, failover)
    std::int64_t allow_ms = 0;   ///< extra liveness allowance (a server clock stepped back)
    std::int64_t epoch = 0;      ///< the grant a kill hit (its target held it), if known
};

/// What a phase allows.
struct phase_expectations {
    bool lost_acks_allowed = false;    ///< async failover: acknowledged writes may be lost
    bool overlaps_allowed = false;     ///< I4 not assumed: clock steps, lost grants (async)
    bool server_clock_stepped = false; ///< I5 not assumed: the server clock jumps
};

/// Minimum work of a phase; a run below any of them fails.
struct phase_floors {
    std::map<std::string, int> effective; ///< per fault kind
    long grants = 0;
    long acked = 0;
    long refused = 0;
    long by_read = 0; ///< grants a successor confirmed by a read after a handover
};

/// Rows of lease_events (with their place in the commit order).
struct db_event {
    std::int64_t id = 0, epoch = 0, ord = 0;
    std::string event, lease, holder;
};

/// Rows of fw_<lease>: one per committed fenced transaction.
struct db_write {
    std::string lease, worker, ops;
    std::int64_t seq = 0, epoch = 0, ord = 0;
};

/// Rows of fs_<lease> (scratch rows written by COPY and INSERT inside a
/// savepoint that was rolled back) and fc_<lease> (per-worker counters).
struct db_scratch {
    std::string lease, worker;
    std::int64_t seq = 0;
    bool rolled_back = false;
};
struct db_counter {
    std::string lease, worker;
    std::int64_t n = 0;
};

/// A raise of a downstream floor (the downstream phase), with its place in
/// the downstream database's commit order.
struct db_raise {
    std::string lease;
    std::int64_t epoch = 0, ord = 0;
};

struct phase_bundle {
    std::string phase;
    unsigned seed = 0;
    int ttl_ms = 1000;
    int retry_ms = 200;
    int takeover_ms = 1000; ///< the server's pg_lease.takeover_timeout
    std::int64_t end = 0;   ///< when the workers were told to stop
    phase_expectations expect;
    phase_floors floors;
    std::map<std::string, int> planned; ///< injections planned per kind
    std::vector<fault_record> faults;
    std::vector<db_event> events;
    std::vector<db_write> writes;
    std::vector<db_scratch> scratch;
    std::vector<db_counter> counters;
    /// The downstream phase: rows of dw_<lease> in the downstream database
    /// (ord: their commit order there) and the raises of its floors.
    std::vector<db_write> downstream_writes;
    std::vector<db_raise> raises;
    std::vector<nlohmann::json> history;
};

nlohmann::json to_json(const phase_bundle& b);
phase_bundle bundle_from_json(const nlohmann::json& j);
void save_bundle(const phase_bundle& b, const std::string& path);
phase_bundle load_bundle(const std::string& path);

} // namespace fault
