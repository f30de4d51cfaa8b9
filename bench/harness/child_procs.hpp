/// @file child_procs.hpp
/// @brief Helper processes for the benchmarks: this very binary run again
/// (fork + exec of /proc/self/exe) with a child mode's arguments, talking
/// to the parent in lines over its stdin and stdout.
#pragma once

#include "harness.hpp"

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace bench {

/// One child: `pglease_bench ARGS...`. Not copyable; the destructor kills
/// (SIGKILL) and reaps a child still running, so no error path leaks one.
class child_proc {
public:
    explicit child_proc(const std::vector<std::string>& args);
    ~child_proc();
    child_proc(const child_proc&) = delete;
    child_proc& operator=(const child_proc&) = delete;
    child_proc(child_proc&&) = delete;
    child_proc& operator=(child_proc&&) = delete;

    /// The next line the child wrote, or nullopt at EOF or once @p until passed.
    std::optional<std::string> read_line(steady::time_point until);
    /// Writes @p line and a newline to the child's stdin (ignores a dead child).
    void write_line(const std::string& line);
    /// Waits for the exit until @p until: the exit code, or -1 (then killed).
    int wait(steady::time_point until);

    [[nodiscard]] pid_t pid() const noexcept { return m_pid; }

private:
    pid_t m_pid = -1;
    int m_to = -1;   ///< its stdin
    int m_from = -1; ///< its stdout
    std::string m_buffer;
    bool m_reaped = false;
};

/// Raises the soft limit of open files to the hard one if it is below
/// @p needed; throws std::runtime_error if even the hard limit is below.
void require_open_files(long needed);

} // namespace bench
