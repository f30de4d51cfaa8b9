/// @file fleet.hpp
/// @brief The member processes of the group fault test: spawn, SIGKILL,
/// SIGSTOP/SIGCONT, a cut of a member's network, and never leave one
/// stopped or running behind.
#pragma once

#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pglease::group_fault {

class fleet {
public:
    fleet(std::string group, int shards, int write_ms)
        : m_group{std::move(group)}
        , m_shards{shards}
        , m_write_ms{write_ms} {}
    fleet(const fleet&) = delete;
    fleet& operator=(const fleet&) = delete;
    fleet(fleet&&) = delete;
    fleet& operator=(fleet&&) = delete;
    /// SIGCONT and SIGKILL to every member still there, and reaps them.
    ~fleet();

    /// Starts a member process with @p identity (this executable, --member).
    void spawn(const std::string& identity);
    void kill(const std::string& identity);
    void pause(const std::string& identity);
    void resume(const std::string& identity);
    /// SIGTERM to all; true when all exited 0 within @p seconds.
    bool stop_all(int seconds);

    /// A network namespace a member can run in, and the server's address
    /// on its link (tests/harness/netns.sh made them).
    struct host {
        std::string ns;
        std::string server_addr;
    };
    /// From now on each member runs on a free host of these, connecting
    /// to the server at that host's address (PGHOST).
    void use_hosts(std::vector<host> hosts) { m_hosts = std::move(hosts); }
    [[nodiscard]] bool on_hosts() const noexcept { return !m_hosts.empty(); }
    /// Drops every packet of @p identity's host (nftables; its sockets stay
    /// open), or lifts that.
    void cut(const std::string& identity, bool on);

private:
    std::string m_group;
    int m_shards;
    int m_write_ms;
    std::map<std::string, pid_t> m_pids;
    std::vector<host> m_hosts;
    std::map<std::string, std::size_t> m_host_of; ///< identity -> index in m_hosts
};

} // namespace pglease::group_fault
