/// @file common.cpp
/// @brief Time, history files and process helpers of the fault suite.
#include "common.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>

extern char** environ;

namespace fault {

std::int64_t mono_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::int64_t wall_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void sleep_ms(std::int64_t ms) noexcept {
    if (ms <= 0)
        return;
    timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

history_file::history_file(const std::string& path)
    : m_fd{::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)} {
    if (m_fd < 0)
        throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
}

history_file::~history_file() {
    if (m_fd >= 0)
        ::close(m_fd);
}

void history_file::append(const nlohmann::json& record) {
    const std::string line = record.dump() + "\n";
    const std::lock_guard lock{m_mutex};
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        const ssize_t n = ::write(m_fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

std::vector<nlohmann::json> read_history(const std::string& path) {
    std::vector<nlohmann::json> out;
    std::ifstream in{path};
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty())
            continue;
        try {
            out.push_back(nlohmann::json::parse(line));
        } catch (const std::exception&) {
            // torn last line of a killed process
        }
    }
    return out;
}

namespace {

std::vector<char*> c_argv(std::vector<std::string>& args) {
    std::vector<char*> v;
    v.reserve(args.size() + 1);
    for (auto& a : args)
        v.push_back(a.data());
    v.push_back(nullptr);
    return v;
}

int fork_exec(std::vector<std::string> argv, const std::vector<std::string>& env,
              const std::string& log, bool new_group) {
    auto args = c_argv(argv);
    const pid_t pid = fork();
    if (pid < 0)
        throw std::runtime_error(std::string{"fork: "} + std::strerror(errno));
    if (pid == 0) {
        if (new_group) {
            setpgid(0, 0);
            prctl(PR_SET_PDEATHSIG, SIGKILL); // workers die with the suite
        }
        for (const auto& e : env) {
            const auto eq = e.find('=');
            if (eq != std::string::npos)
                setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
        }
        const int fd =
            ::open(log.empty() ? "/dev/null" : log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            ::close(fd);
        }
        const int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) {
            dup2(devnull, 0);
            ::close(devnull);
        }
        signal(SIGPIPE, SIG_DFL);
        execvp(args[0], args.data());
        _exit(127);
    }
    return pid;
}

} // namespace

int run_command(const std::vector<std::string>& argv, bool as_postgres,
                const std::vector<std::string>& env, const std::string& log, int timeout_s) {
    std::vector<std::string> full;
    if (as_postgres && geteuid() == 0)
        full = {"runuser", "-u", "postgres", "--"};
    if (!env.empty()) {
        full.emplace_back("env");
        full.insert(full.end(), env.begin(), env.end());
    }
    full.insert(full.end(), argv.begin(), argv.end());
    const int pid = fork_exec(full, {}, log, false);
    const auto end = mono_ns() + static_cast<std::int64_t>(timeout_s) * 1000000000;
    for (;;) {
        int status = 0;
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (r < 0)
            return -1;
        if (mono_ns() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        sleep_ms(10);
    }
}

int spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
          const std::string& log) {
    return fork_exec(argv, env, log, true);
}

bool reap(int pid) noexcept {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    return r == pid || (r < 0 && errno == ECHILD);
}

void terminate_process(int pid, int grace_ms) noexcept {
    if (pid <= 0 || reap(pid))
        return;
    kill(pid, SIGCONT);
    kill(pid, SIGTERM);
    const auto end = mono_ns() + static_cast<std::int64_t>(grace_ms) * 1000000;
    while (mono_ns() < end) {
        if (reap(pid))
            return;
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
}

// Below the kernel's ephemeral range: a port in it can be taken at any
// moment as the local end of an outbound connection, which no bind test
// foresees (tests/harness/free_port.sh does the same).
static int first_ephemeral_port() {
    std::ifstream range{"/proc/sys/net/ipv4/ip_local_port_range"};
    int low = 0;
    if (!(range >> low) || low <= 11000)
        low = 32768;
    return low;
}

// Suites run side by side (ctest -j): a port is claimed before it is
// handed out, as a directory (created atomically) that the other suites'
// pickers skip for an hour (tests/harness/free_port.sh, pg_port_claim).
static bool claim_port(int port) {
    namespace fs = std::filesystem;
    const char* env = std::getenv("PG_PORT_CLAIMS");
    const fs::path dir{env != nullptr && *env != '\0' ? env : "/tmp/pglease-ports"};
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path claim = dir / std::to_string(port);
    if (fs::create_directory(claim, ec))
        return true;
    const auto age = fs::file_time_type::clock::now() - fs::last_write_time(claim, ec);
    if (ec || age < std::chrono::hours{1})
        return false;
    fs::remove(claim, ec); // an earlier run's claim
    return fs::create_directory(claim, ec);
}

int free_port() {
    static std::mt19937 rng{static_cast<unsigned>(mono_ns()) ^ static_cast<unsigned>(getpid())};
    std::uniform_int_distribution<int> pick{10000, first_ephemeral_port() - 1};
    for (int i = 0; i < 200; ++i) {
        const int port = pick(rng);
        const int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            continue;
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const int rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
        ::close(fd);
        if (rc == 0 && claim_port(port))
            return port;
    }
    throw std::runtime_error("no free loopback port");
}

} // namespace fault
