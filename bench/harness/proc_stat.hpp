/// @file proc_stat.hpp
/// @brief CPU time of processes on this machine, from /proc (Linux): the
/// server's side of a figure when the server runs here.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace bench {

/// user + system CPU time of @p pid so far; nullopt when unreadable.
std::optional<std::chrono::microseconds> process_cpu(pid_t pid);

/// The parent of @p pid; nullopt when unreadable.
std::optional<pid_t> parent_of(pid_t pid);

/// CPU time so far of @p parent and of every process whose parent it is
/// (a postmaster: its backends and background workers).
std::chrono::microseconds tree_cpu(pid_t parent);

/// CPU time so far of each of @p pids, summed (unreadable ones count 0).
std::chrono::microseconds total_cpu(const std::vector<pid_t>& pids);

/// The one process named @p comm whose command line contains @p needle;
/// nullopt when there is none or more than one.
std::optional<pid_t> find_process(const std::string& comm, const std::string& needle);

} // namespace bench
