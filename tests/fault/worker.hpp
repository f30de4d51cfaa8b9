/// @file worker.hpp
/// @brief One worker process: an elector campaigning for a lease through
/// the client library, and a writer appending fenced rows, recording every
/// operation with CLOCK_MONOTONIC times.
#pragma once

#include <signal.h>

#include <string>

namespace fault {

/// What a worker does; passed on its command line as --key=value.
struct worker_settings {
    std::string label;    ///< process label, e.g. "p3"; identities are label.generation
    std::string lease;    ///< lease name; the fenced table is fw_<lease>
    std::string conninfo; ///< libpq connection string (loopback only)
    /// A downstream database (the downstream phase): each transaction also
    /// writes dw_<lease> there, fenced by the lease's floor; empty: none.
    std::string downstream;
    std::string history; ///< path of this worker's history file
    int ttl_ms = 1000;
    int renew_deadline_ms = 600;
    int retry_ms = 200;
    int write_interval_ms = 20;
    /// Each fenced transaction's time bound (run_fenced's timeout), also
    /// of the downstream one; 0: none (the server's waits decide).
    int write_timeout_ms = 0;
    int sample_ms = 2;       ///< how often held() is sampled
    int duration_ms = 60000; ///< the worker exits by itself after this
    bool listen = true;      ///< false through a transaction pooler
    bool storm = false;      ///< random resign / campaign again
    /// "insert": one fenced INSERT into fw_<lease> (lease, worker, seq,
    /// epoch, slow) per transaction, for harnesses with that table only
    /// (tests/ha); "mixed": the suite's workload (workload.hpp), which also
    /// needs fw_<lease>.ops, fs_<lease> and fc_<lease>.
    std::string workload = "insert";
    unsigned seed = 1;
};

/// Signals the orchestrator sends a worker to run a hook in its next
/// fenced transaction, after its fenced writes: stop the whole process
/// there (idle in transaction), stop it while the transaction's backend
/// runs a long statement, or run a transaction of 2.5 x ttl.
inline int stall_idle_signal() {
    return SIGRTMIN;
}
inline int stall_busy_signal() {
    return SIGRTMIN + 1;
}
inline int long_txn_signal() {
    return SIGRTMIN + 2;
}
/// Asks the worker to hand its lease over (elector::yield_to) to the
/// identity the orchestrator wrote to <history>.handover; the worker keeps
/// its current identity in <history>.id for the orchestrator to name.
inline int handover_signal() {
    return SIGRTMIN + 3;
}

/// Parses "--key=value" arguments (argv after "worker").
worker_settings parse_worker_args(int argc, char** argv);

/// The worker's main; returns the exit status.
int run_worker(const worker_settings& s);

} // namespace fault
