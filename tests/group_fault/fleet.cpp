/// @file fleet.cpp
/// @brief Member processes: fork + exec of this very executable.
#include "fleet.hpp"

#include <chrono>
#include <csignal>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace pglease::group_fault {

fleet::~fleet() {
    for (const auto& [id, pid] : m_pids) {
        ::kill(pid, SIGCONT); // never leave a stopped process behind
        ::kill(pid, SIGKILL);
        (void)::waitpid(pid, nullptr, 0);
    }
}

void fleet::spawn(const std::string& identity) {
    const pid_t pid = ::fork();
    if (pid < 0)
        throw std::runtime_error{"fork failed"};
    if (pid == 0) {
        const std::string shards = std::to_string(m_shards);
        const std::string write = std::to_string(m_write_ms);
        std::vector<const char*> argv{
            "pglease_group_fault", "--member",    m_group.c_str(), shards.c_str(),
            identity.c_str(),      write.c_str(), nullptr};
        ::execv("/proc/self/exe", const_cast<char* const*>(argv.data()));
        ::_exit(127);
    }
    m_pids[identity] = pid;
}

void fleet::kill(const std::string& identity) {
    const pid_t pid = m_pids.at(identity);
    ::kill(pid, SIGKILL);
    ::kill(pid, SIGCONT);
    (void)::waitpid(pid, nullptr, 0);
    m_pids.erase(identity);
}

void fleet::pause(const std::string& identity) {
    ::kill(m_pids.at(identity), SIGSTOP);
}

void fleet::resume(const std::string& identity) {
    ::kill(m_pids.at(identity), SIGCONT);
}

bool fleet::stop_all(int seconds) {
    for (const auto& [id, pid] : m_pids) {
        ::kill(pid, SIGCONT);
        ::kill(pid, SIGTERM);
    }
    bool clean = true;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds{seconds};
    for (auto it = m_pids.begin(); it != m_pids.end();) {
        int status = 0;
        pid_t r = 0;
        while ((r = ::waitpid(it->second, &status, WNOHANG)) == 0 &&
               std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds{20});
        if (r == 0) {
            ::kill(it->second, SIGKILL);
            (void)::waitpid(it->second, &status, 0);
            clean = false;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            clean = false;
        }
        it = m_pids.erase(it);
    }
    return clean;
}

} // namespace pglease::group_fault
