/// @file guardian.cpp
/// @brief Cleaning up after the suite, even when it is killed.
#include "guardian.hpp"

#include "cluster.hpp"
#include "common.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fault {

/// Stops every cluster and pgbouncer under @p root and removes it.
void cleanup_root(const std::string& root, bool keep) {
    std::error_code ec;
    if (!std::filesystem::exists(root, ec))
        return;
    for (auto it = std::filesystem::recursive_directory_iterator{root, ec};
         it != std::filesystem::recursive_directory_iterator{}; it.increment(ec)) {
        if (ec)
            break;
        if (it.depth() > 3) {
            it.disable_recursion_pending();
            continue;
        }
        const auto& path = it->path();
        if (path.filename() == "postmaster.pid")
            run_command({pg_bin() + "/pg_ctl", "-D", path.parent_path().string(), "-m", "immediate",
                         "-w", "-t", "30", "stop"},
                        true, {}, "", 40);
        if (path.filename() == "pgbouncer.pid") {
            std::ifstream in{path};
            int pid = 0;
            if (in >> pid && pid > 0)
                kill(pid, SIGKILL);
        }
    }
    if (!keep && !std::filesystem::exists(root + "/KEEP", ec))
        std::filesystem::remove_all(root, ec);
}

/// A child that outlives this process only to clean up after it: if the
/// suite is killed (ctest's timeout sends SIGKILL), its clusters must not
/// be left running. Workers die with it through PR_SET_PDEATHSIG.
void start_guardian(const std::string& root, bool keep) {
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid != 0)
        return;
    setsid();
    const int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    while (getppid() == parent)
        sleep_ms(200);
    cleanup_root(root, keep);
    _exit(0);
}

} // namespace fault
