/// @file common.hpp
/// @brief Shared by the fault suite's orchestrator, workers and checker:
/// monotonic time, the history record format, process helpers.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace fault {

/// CLOCK_MONOTONIC in nanoseconds: one clock shared by every process on
/// this machine, unaffected by SIGSTOP (it keeps counting) and by
/// libfaketime when FAKETIME_DONT_FAKE_MONOTONIC=1.
std::int64_t mono_ns() noexcept;

/// CLOCK_REALTIME in nanoseconds (wall-clock stamps of observed beliefs).
std::int64_t wall_ns() noexcept;

/// Sleeps @p ms milliseconds (restarting on EINTR), bounded by the caller.
void sleep_ms(std::int64_t ms) noexcept;

/// Appends one JSON object per line to a file with one write(2) per line,
/// so a SIGKILL loses at most the line being written. Thread-safe.
class history_file {
public:
    explicit history_file(const std::string& path);
    ~history_file();
    history_file(const history_file&) = delete;
    history_file& operator=(const history_file&) = delete;
    history_file(history_file&&) = delete;
    history_file& operator=(history_file&&) = delete;

    void append(const nlohmann::json& record);

private:
    std::mutex m_mutex;
    int m_fd = -1;
};

/// Reads every line of a history file written by history_file; a torn last
/// line (process killed mid-write) is skipped.
std::vector<nlohmann::json> read_history(const std::string& path);

/// Runs @p argv (as the postgres user when this process is root and
/// @p as_postgres), with @p env added to the environment, stdout and stderr
/// appended to @p log; waits at most @p timeout_s. Returns the exit status
/// (-1 on timeout, after SIGKILL).
int run_command(const std::vector<std::string>& argv, bool as_postgres,
                const std::vector<std::string>& env, const std::string& log, int timeout_s);

/// Starts @p argv in the background (own process group), stdout/stderr to
/// @p log. Returns the pid.
int spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
          const std::string& log);

/// Reaps @p pid if it exited (non-blocking). True if it is gone.
bool reap(int pid) noexcept;

/// SIGTERM, then SIGKILL after @p grace_ms; reaps.
void terminate_process(int pid, int grace_ms) noexcept;

/// A TCP port on 127.0.0.1 nothing listens on.
int free_port();

} // namespace fault
