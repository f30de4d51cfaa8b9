/// @file run_job.cpp
/// @brief The job's environment and fork/exec.
#include "run/run_job.hpp"

#include "run/run_signals.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

extern char** environ;

namespace pglease::cli {

std::vector<std::string> job_environment(const std::string& lease, std::int64_t epoch,
                                         const std::string& holder) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view kv{*e};
        if (kv.rfind("PGLEASE_NAME=", 0) == 0 || kv.rfind("PGLEASE_EPOCH=", 0) == 0 ||
            kv.rfind("PGLEASE_HOLDER=", 0) == 0 || kv.rfind("PGOPTIONS=", 0) == 0)
            continue;
        env.emplace_back(kv);
    }
    const char* old_options = std::getenv("PGOPTIONS");
    std::string options = old_options != nullptr ? old_options : "";
    if (!options.empty())
        options += ' ';
    options += "-c pg_lease.epoch=" + std::to_string(epoch);
    env.push_back("PGOPTIONS=" + options);
    env.push_back("PGLEASE_NAME=" + lease);
    env.push_back("PGLEASE_EPOCH=" + std::to_string(epoch));
    env.push_back("PGLEASE_HOLDER=" + holder);
    return env;
}

spawned_job spawn_job(const std::vector<std::string>& command,
                      const std::vector<std::string>& env) {
    std::vector<std::string> env_copy = env;
    std::vector<char*> envp;
    for (auto& s : env_copy)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = command;
    std::vector<char*> argv;
    for (auto& s : args)
        argv.push_back(s.data());
    argv.push_back(nullptr);

    // Orphaned grandchildren come back to us, so we can reap them and see
    // the group die.
    (void)::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

    int exec_pipe[2];
    if (::pipe2(exec_pipe, O_CLOEXEC) != 0)
        return {-1, 1, std::string{"pipe2: "} + std::strerror(errno)};
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int err = errno;
        ::close(exec_pipe[0]);
        ::close(exec_pipe[1]);
        return {-1, 1, std::string{"fork: "} + std::strerror(err)};
    }
    if (pid == 0) {
        // The child: async-signal-safe calls only, until exec.
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); // pglease SIGKILLed: the job dies too
        if (::getppid() != parent)
            ::_exit(127);
        run_signals::reset_in_child();
        ::execvpe(argv[0], argv.data(), envp.data());
        const int err = errno;
        [[maybe_unused]] const auto n = ::write(exec_pipe[1], &err, sizeof err);
        ::_exit(err == ENOENT ? 127 : 126);
    }
    ::setpgid(pid, pid); // also here: no race with signalling the group
    ::close(exec_pipe[1]);
    int err = 0;
    ssize_t n;
    do
        n = ::read(exec_pipe[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    ::close(exec_pipe[0]);
    if (n == static_cast<ssize_t>(sizeof err)) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        return {-1, err == ENOENT ? 127 : 126,
                "cannot run " + command[0] + ": " + std::strerror(err)};
    }
    return {pid, 0, {}};
}

std::string quote_command(const std::vector<std::string>& cmd) {
    std::string out;
    for (const auto& arg : cmd) {
        if (!out.empty())
            out += ' ';
        const bool plain =
            !arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
        out += plain ? arg : "'" + arg + "'";
    }
    return out;
}

} // namespace pglease::cli
