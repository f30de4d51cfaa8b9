/// @file run_job.hpp
/// @brief Starting `pglease run`'s job: its environment (the lease's
/// variables, and the fencing token in PGOPTIONS so its own libpq writes are
/// fenced) and fork/exec into a process group of its own.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pglease::cli {

/// This process's environment with PGLEASE_NAME, PGLEASE_EPOCH,
/// PGLEASE_HOLDER set and `-c pg_lease.epoch=<epoch>` added to PGOPTIONS.
[[nodiscard]] std::vector<std::string> job_environment(const std::string& lease, std::int64_t epoch,
                                                       const std::string& holder);

/// What spawn_job() did: a running job (pid > 0), or why not.
struct spawned_job {
    pid_t pid = -1;
    int exit_code = 0; ///< when pid <= 0: 126/127 (exec failed) or 1
    std::string error; ///< when pid <= 0
};

/// Forks and execs @p command with @p env in a new process group, with
/// default signal dispositions; the job dies with us (PR_SET_PDEATHSIG),
/// and we become the reaper of its orphans. Returns once exec succeeded.
[[nodiscard]] spawned_job spawn_job(const std::vector<std::string>& command,
                                    const std::vector<std::string>& env);

/// A command line for messages, with shell quoting where needed.
[[nodiscard]] std::string quote_command(const std::vector<std::string>& cmd);

} // namespace pglease::cli
