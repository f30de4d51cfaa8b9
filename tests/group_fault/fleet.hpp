/// @file fleet.hpp
/// @brief The member processes of the group fault test: spawn, SIGKILL,
/// SIGSTOP/SIGCONT, and never leave one stopped or running behind.
#pragma once

#include <map>
#include <string>
#include <sys/types.h>

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

private:
    std::string m_group;
    int m_shards;
    int m_write_ms;
    std::map<std::string, pid_t> m_pids;
};

} // namespace pglease::group_fault
