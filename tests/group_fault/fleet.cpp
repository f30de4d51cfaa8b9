/// @file fleet.cpp
/// @brief Member processes: fork + exec of this very executable.
#include "fleet.hpp"
#include "nft_cut.hpp"

#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
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
    // On hosts: the first host no live member uses.
    const host* on = nullptr;
    for (std::size_t i = 0; i < m_hosts.size() && on == nullptr; ++i) {
        bool taken = false;
        for (const auto& [id, h] : m_host_of)
            taken = taken || h == i;
        if (!taken) {
            m_host_of[identity] = i;
            on = &m_hosts[i];
        }
    }
    if (!m_hosts.empty() && on == nullptr)
        throw std::runtime_error{"no free host for " + identity};
    char self[PATH_MAX] = {};
    if (::readlink("/proc/self/exe", self, sizeof self - 1) < 0)
        throw std::runtime_error{"readlink /proc/self/exe failed"};
    const pid_t pid = ::fork();
    if (pid < 0)
        throw std::runtime_error{"fork failed"};
    if (pid == 0) {
        const std::string shards = std::to_string(m_shards);
        const std::string write = std::to_string(m_write_ms);
        std::vector<const char*> argv;
        if (on != nullptr) {
            ::setenv("PGHOST", on->server_addr.c_str(), 1);
            argv = {"ip", "netns", "exec", on->ns.c_str()};
        }
        argv.insert(argv.end(), {self, "--member", m_group.c_str(), shards.c_str(),
                                 identity.c_str(), write.c_str(), nullptr});
        ::execvp(argv[0], const_cast<char* const*>(argv.data()));
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
    m_host_of.erase(identity);
}

void fleet::cut(const std::string& identity, bool on) {
    const std::string ns = m_hosts.at(m_host_of.at(identity)).ns;
    const std::string cmd =
        "ip netns exec " + ns + " " +
        pglease_test::shell_words(on ? pglease_test::nft_cut() : pglease_test::nft_heal());
    if (std::system(cmd.c_str()) != 0 && on)
        throw std::runtime_error{"could not cut " + identity + "'s host off: " + cmd};
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
