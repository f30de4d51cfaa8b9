/// @file cmd_run.cpp
/// @brief `pglease run`: a job under a lease, in its own process group,
/// killed before the lease can expire in store time.
///
/// run/: everything of `pglease run`: the plan from the options, the
/// acquire, the job and its process group, signals, the supervisor loop,
/// handover and handover requests, downstream raises, `--http` metrics.
///
/// The supervisor, in numbered steps:
///  1. Acquire: one try with --no-wait (75 when held elsewhere), otherwise
///     wait, woken by NOTIFY pg_lease and by the expiry the server reported.
///     Until a server first answers (none up, or none accepting writes while
///     a failover runs), retry with backoff for --connect-timeout.
///  2. Start the job: fork, setpgid, exec with PGLEASE_* and PGOPTIONS
///     carrying `-c pg_lease.epoch=<epoch>`, so its own libpq writes to
///     fenced tables carry the token without code changes.
///  3. Renew on a thread of its own at ttl/3, retrying every `retry`, and at
///     once on a NOTIFY about the lease (revoke, release, takeover); never
///     renew once the step-down point has passed, and bound every renew by
///     it (a blocked renew is cancelled then: see connection_options).
///  4. Supervise on the main thread: every time it wakes, FIRST compare the
///     monotonic clock with the step-down point (deadline - kill_after), so
///     a process that was SIGSTOPped and continued acts before anything
///     else. Lost (renew refused) or past the step-down point: SIGTERM to
///     the group, SIGKILL after --kill-after (at once if even the local
///     deadline passed), wait for the group to be gone, exit 76.
///  5. SIGINT/SIGTERM/SIGHUP/SIGQUIT are passed to the group (a second one
///     sends SIGKILL); SIGUSR1/SIGUSR2 are passed on.
///  6. When the job exits, leftover processes in its group get SIGTERM (then
///     SIGKILL), the lease is released, and pglease exits with the job's
///     status (128 + signal when a signal killed it).
///  7. Rolling deploys (pglease/internal/handover_request.hpp): a holder LISTENs on
///     pg_lease_handover; a request from `run --take-over` whose sending
///     session is still there and of the holder's role (or a superuser)
///     stops the job as in step 4, then lease_handover() gives the lease to
///     the requester and pglease exits 0. The requester, waiting in step 1,
///     wakes on the handover event and acquires the handed epoch.
///
/// The library's lease gives the local deadline: steady time when the last
/// successful acquire/renew was *sent* + ttl - safety margin, always before
/// the server's expiry. The fence is the second line of defence: whatever
/// the job writes after the lease moved on is refused by the database.
#include "commands.hpp"
#include "common/common.hpp"
#include "run/run_supervisor.hpp"

namespace pglease::cli {

int cmd_run(const global_options& g, const run_args& a) {
    try {
        supervisor s{g, a};
        return s.run();
    } catch (const std::exception& e) {
        return report_error(e);
    }
}

} // namespace pglease::cli
