/// @file proc_stat.cpp
/// @brief /proc/<pid>/stat and /proc/<pid>/cmdline readers.
#include "proc_stat.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace bench {

namespace {

/// The fields of /proc/<pid>/stat after "(comm)": [0] is field 3 (state).
std::optional<std::vector<std::string>> stat_fields(pid_t pid, std::string* comm = nullptr) {
    std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
    std::string text{std::istreambuf_iterator<char>{in}, {}};
    const auto open = text.find('(');
    const auto close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open)
        return std::nullopt;
    if (comm != nullptr)
        *comm = text.substr(open + 1, close - open - 1);
    std::istringstream rest{text.substr(close + 1)};
    std::vector<std::string> fields{std::istream_iterator<std::string>{rest}, {}};
    if (fields.size() < 13)
        return std::nullopt;
    return fields;
}

std::vector<pid_t> all_pids() {
    std::vector<pid_t> out;
    DIR* d = opendir("/proc");
    if (d == nullptr)
        return out;
    while (const dirent* e = readdir(d)) {
        char* end = nullptr;
        const long v = std::strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0' && v > 0)
            out.push_back(static_cast<pid_t>(v));
    }
    closedir(d);
    return out;
}

} // namespace

std::optional<std::chrono::microseconds> process_cpu(pid_t pid) {
    const auto f = stat_fields(pid);
    if (!f)
        return std::nullopt;
    // utime and stime: fields 14 and 15, in clock ticks.
    const double ticks = std::stod((*f)[11]) + std::stod((*f)[12]);
    const auto hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    return std::chrono::microseconds{static_cast<long long>(ticks / hz * 1e6)};
}

std::optional<pid_t> parent_of(pid_t pid) {
    const auto f = stat_fields(pid);
    if (!f)
        return std::nullopt;
    return static_cast<pid_t>(std::stol((*f)[1]));
}

std::chrono::microseconds tree_cpu(pid_t parent) {
    std::vector<pid_t> members{parent};
    for (const pid_t p : all_pids())
        if (parent_of(p) == parent)
            members.push_back(p);
    return total_cpu(members);
}

std::chrono::microseconds total_cpu(const std::vector<pid_t>& pids) {
    std::chrono::microseconds sum{0};
    for (const pid_t p : pids)
        sum += process_cpu(p).value_or(std::chrono::microseconds{0});
    return sum;
}

std::optional<pid_t> find_process(const std::string& comm, const std::string& needle) {
    std::optional<pid_t> found;
    for (const pid_t p : all_pids()) {
        std::string name;
        if (!stat_fields(p, &name) || name != comm)
            continue;
        std::ifstream in{"/proc/" + std::to_string(p) + "/cmdline"};
        const std::string cmdline{std::istreambuf_iterator<char>{in}, {}};
        if (cmdline.find(needle) == std::string::npos)
            continue;
        if (found)
            return std::nullopt; // more than one: not sure which
        found = p;
    }
    return found;
}

} // namespace bench
