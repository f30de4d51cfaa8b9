/// @file workload.hpp
/// @brief The writer of a worker process: fenced transactions with the last
/// epoch the process was granted, until the server refuses them (a leader
/// that keeps believing, Kleppmann's paused process): only the fence stands
/// between it and the data. Each transaction INSERTs its witness row into
/// fw_<lease> (worker, seq, epoch, ops) and mixes in, at random, a fenced
/// UPDATE of the worker's counter (fc_<lease>), COPY of scratch rows, a
/// DELETE, a TRUNCATE (fs_<lease>), an INSERT inside a savepoint that is
/// rolled back (before the first other fenced write, so the fence's lock
/// has to be taken again after ROLLBACK TO), and a short sleep. With
/// `--workload=insert` (the default, for harnesses such as tests/ha that
/// create fw_<lease> only) each transaction is the INSERT and the sleep.
#pragma once

#include "common.hpp"
#include "worker.hpp"

#include <pglease/pglease.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace fault {

/// What the orchestrator asked for with a signal (worker.hpp).
enum class hook : int { none = 0, stall_idle, stall_busy, long_txn };

/// Shared by the elector loop, the held() sampler and the writer.
class worker_state {
public:
    std::mutex mutex;
    pglease::elector* elector = nullptr;  ///< the current generation's
    std::string identity;                 ///< its identity
    std::atomic<std::int64_t> epoch{0};   ///< the epoch the writer writes with
    std::atomic<int> pending{0};          ///< a hook to run in the next transaction
    std::atomic<std::int64_t> stop_at{0}; ///< the sampler SIGSTOPs the process then
    std::atomic<bool> stop{false};

    /// Sets the epoch the writer writes with and wakes a writer waiting.
    void lead(std::int64_t e) {
        {
            const std::lock_guard lock{lead_mutex};
            epoch.store(e);
        }
        lead_cv.notify_all();
    }
    /// Waits up to @p limit for an epoch to write with (0: none by then):
    /// a candidate's writer sleeps instead of polling (64 writers polling
    /// every 5 ms cost a VM's 2 cores most of one).
    std::int64_t await_lead(std::chrono::milliseconds limit) {
        std::unique_lock lock{lead_mutex};
        lead_cv.wait_for(lock, limit, [this] { return epoch.load() != 0 || stop.load(); });
        return epoch.load();
    }

private:
    std::mutex lead_mutex;
    std::condition_variable lead_cv;
};

/// Runs fenced transactions until @p st.stop or @p end.
void writer_loop(const worker_settings& s, history_file& h, worker_state& st, std::int64_t end);

} // namespace fault
