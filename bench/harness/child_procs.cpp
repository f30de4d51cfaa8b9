/// @file child_procs.cpp
/// @brief fork + exec of this binary with pipes, bounded line reads.
#include "child_procs.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <poll.h>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace bench {

child_proc::child_proc(const std::vector<std::string>& args) {
    int to[2];
    int from[2];
    if (pipe(to) != 0)
        throw std::runtime_error(std::string{"pipe: "} + std::strerror(errno));
    if (pipe(from) != 0) {
        close(to[0]);
        close(to[1]);
        throw std::runtime_error(std::string{"pipe: "} + std::strerror(errno));
    }
    std::vector<std::string> argv_text{"/proc/self/exe"};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(argv_text.size() + 1);
    for (auto& a : argv_text)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    m_pid = fork();
    if (m_pid < 0)
        throw std::runtime_error(std::string{"fork: "} + std::strerror(errno));
    if (m_pid == 0) {
        dup2(to[0], STDIN_FILENO);
        dup2(from[1], STDOUT_FILENO);
        for (const int fd : {to[0], to[1], from[0], from[1]})
            close(fd);
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    m_to = to[1];
    m_from = from[0];
    signal(SIGPIPE, SIG_IGN); // a child that died must not kill the parent's write
}

child_proc::~child_proc() {
    if (!m_reaped && m_pid > 0) {
        kill(m_pid, SIGKILL);
        waitpid(m_pid, nullptr, 0);
    }
    if (m_to >= 0)
        close(m_to);
    if (m_from >= 0)
        close(m_from);
}

std::optional<std::string> child_proc::read_line(steady::time_point until) {
    for (;;) {
        const auto nl = m_buffer.find('\n');
        if (nl != std::string::npos) {
            std::string line = m_buffer.substr(0, nl);
            m_buffer.erase(0, nl + 1);
            return line;
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - steady::now());
        if (left.count() <= 0)
            return std::nullopt;
        pollfd p{m_from, POLLIN, 0};
        const int rc = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
        if (rc < 0 && errno != EINTR)
            return std::nullopt;
        if (rc <= 0)
            continue;
        char buf[4096];
        const ssize_t got = read(m_from, buf, sizeof buf);
        if (got <= 0)
            return std::nullopt; // EOF: the child is gone
        m_buffer.append(buf, static_cast<std::size_t>(got));
    }
}

void child_proc::write_line(const std::string& line) {
    const std::string text = line + "\n";
    [[maybe_unused]] const ssize_t n = write(m_to, text.data(), text.size());
}

int child_proc::wait(steady::time_point until) {
    while (!m_reaped) {
        int status = 0;
        const pid_t r = waitpid(m_pid, &status, WNOHANG);
        if (r == m_pid) {
            m_reaped = true;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (steady::now() >= until) {
            kill(m_pid, SIGKILL);
            waitpid(m_pid, nullptr, 0);
            m_reaped = true;
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return -1;
}

void require_open_files(long needed) {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
        throw std::runtime_error("getrlimit(RLIMIT_NOFILE) failed");
    if (lim.rlim_cur != RLIM_INFINITY && static_cast<long>(lim.rlim_cur) >= needed)
        return;
    if (lim.rlim_max != RLIM_INFINITY && static_cast<long>(lim.rlim_max) < needed)
        throw std::runtime_error("open files: need " + std::to_string(needed) + ", hard limit is " +
                                 std::to_string(lim.rlim_max) + " (raise it with ulimit -Hn)");
    lim.rlim_cur = lim.rlim_max == RLIM_INFINITY ? static_cast<rlim_t>(needed) : lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
        throw std::runtime_error("setrlimit(RLIMIT_NOFILE) failed");
}

} // namespace bench
