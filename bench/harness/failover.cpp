/// @file failover.cpp
/// @brief Leadership moves: kill -9 of the leader (a child process running
/// an elector) until a waiting follower leads; and a graceful release until
/// a waiting follower, woken by NOTIFY, leads.
#include "figures.hpp"

#include <pglease/elector.hpp>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace bench {

namespace {

using ms = std::chrono::milliseconds;

constexpr ms failover_ttl{2000};
constexpr ms failover_retry{300};
constexpr ms failover_renew_deadline{1500};

/// A follower (or leader) elector that records when it started leading.
class watched_elector {
public:
    watched_elector(const settings& s, const std::string& lease, const std::string& identity,
                    ms ttl, ms renew_deadline, ms retry) {
        pglease::elector_config cfg;
        cfg.lease_name = lease;
        cfg.identity = identity;
        cfg.ttl = ttl;
        cfg.renew_deadline = renew_deadline;
        cfg.retry_period = retry;
        cfg.connection.conninfo = s.pg_conninfo;
        cfg.callbacks.on_started_leading = [this](std::int64_t, const pglease::stop_token& stop) {
            {
                std::lock_guard<std::mutex> lock{m_mutex};
                m_leading_at = steady::now();
            }
            m_cv.notify_all();
            stop.wait();
        };
        cfg.callbacks.on_stopped_leading = [] {};
        cfg.callbacks.on_new_leader = [this](const std::string& id) {
            {
                std::lock_guard<std::mutex> lock{m_mutex};
                m_seen = id;
            }
            m_cv.notify_all();
        };
        m_elector = std::make_unique<pglease::elector>(cfg);
        m_elector->start();
    }

    std::optional<steady::time_point> wait_leading(ms timeout) {
        std::unique_lock<std::mutex> lock{m_mutex};
        m_cv.wait_for(lock, timeout, [&] { return m_leading_at.has_value(); });
        return m_leading_at;
    }

    bool wait_seen(const std::string& id, ms timeout) {
        std::unique_lock<std::mutex> lock{m_mutex};
        return m_cv.wait_for(lock, timeout, [&] { return m_seen == id; });
    }

    void stop() { m_elector->stop(); }

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::optional<steady::time_point> m_leading_at;
    std::string m_seen;
    std::unique_ptr<pglease::elector> m_elector;
};

/// Starts `pglease_bench --leader-child LEASE IDENTITY` and waits until it leads.
pid_t spawn_leader(const std::string& lease, const std::string& identity,
                   const std::string& conninfo) {
    int fds[2];
    if (pipe(fds) != 0)
        throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::string self = "/proc/self/exe", flag = "--leader-child";
    char* argv[] = {self.data(),
                    flag.data(),
                    const_cast<char*>(lease.c_str()),
                    const_cast<char*>(identity.c_str()),
                    const_cast<char*>(conninfo.c_str()),
                    nullptr};
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        throw std::runtime_error(std::string{"posix_spawn: "} + std::strerror(rc));
    }
    char buf[64] = {};
    const ssize_t got = read(fds[0], buf, sizeof buf - 1); // "leading\n", or EOF if it died
    close(fds[0]);
    if (got <= 0 || std::strncmp(buf, "leading", 7) != 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        throw std::runtime_error("leader child did not start leading");
    }
    return pid;
}

} // namespace

int leader_child(int argc, char** argv) {
    if (argc < 5)
        return 2;
    std::atomic<bool> leading{false};
    pglease::elector_config cfg;
    cfg.lease_name = argv[2];
    cfg.identity = argv[3];
    cfg.ttl = failover_ttl;
    cfg.renew_deadline = failover_renew_deadline;
    cfg.retry_period = failover_retry;
    cfg.connection.conninfo = argv[4];
    cfg.callbacks.on_started_leading = [&](std::int64_t, const pglease::stop_token& stop) {
        std::fputs("leading\n", stdout);
        std::fflush(stdout);
        leading = true;
        stop.wait();
    };
    cfg.callbacks.on_stopped_leading = [] {};
    pglease::elector e{cfg};
    e.start();
    // Bounded: a child that is never killed ends by itself.
    std::this_thread::sleep_for(std::chrono::seconds(60));
    e.stop();
    return 0;
}

void run_failover(const settings& s, report& out) {
    std::vector<double> samples;
    std::mutex m;
    std::mt19937 rng{std::random_device{}()};
    const int lanes = s.smoke ? 1 : 3; // independent leases, in parallel to save time
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(lanes));
    std::atomic<int> next{0};
    for (int lane = 0; lane < lanes; ++lane)
        threads.emplace_back([&, lane] {
            try {
                for (int run = next++; run < s.failover_runs; run = next++) {
                    const std::string lease = "f" + s.tag + "-" + std::to_string(run);
                    const std::string leader_id = "bench-leader-" + std::to_string(run);
                    const pid_t pid = spawn_leader(lease, leader_id, s.pg_conninfo);
                    watched_elector follower{s,
                                             lease,
                                             "bench-follower-" + std::to_string(run),
                                             failover_ttl,
                                             failover_renew_deadline,
                                             failover_retry};
                    if (!follower.wait_seen(leader_id, ms{5000}))
                        throw std::runtime_error("follower never saw the leader");
                    // Kill at a random point of the leader's renew cycle.
                    int delay = 0;
                    {
                        std::lock_guard<std::mutex> lock{m};
                        delay = std::uniform_int_distribution<int>{0, 700}(rng);
                    }
                    std::this_thread::sleep_for(ms{delay});
                    const auto killed = steady::now();
                    kill(pid, SIGKILL);
                    waitpid(pid, nullptr, 0);
                    const auto led = follower.wait_leading(ms{10000});
                    follower.stop();
                    if (!led)
                        throw std::runtime_error("follower did not lead within 10 s of the kill");
                    std::lock_guard<std::mutex> lock{m};
                    samples.push_back(
                        std::chrono::duration<double, std::milli>(*led - killed).count());
                    log("failover run " + std::to_string(run) + ": " +
                        std::to_string(samples.back()) + " ms");
                }
            } catch (...) {
                errors[static_cast<std::size_t>(lane)] = std::current_exception();
            }
        });
    for (auto& t : threads)
        t.join();
    for (auto& e : errors)
        if (e)
            std::rethrow_exception(e);
    const double bound = static_cast<double>((failover_ttl + failover_retry).count());
    for (const double p : {50.0, 99.0}) {
        row r;
        r.section = "failover";
        r.figure = std::string{"crash failover (kill -9 leader -> follower leads) p"} +
                   (p == 50 ? "50" : "99");
        r.unit = "ms";
        r.samples = samples;
        r.value = percentile(samples, p);
        r.baseline = bound;
        r.baseline_name = "ttl + retry";
        if (p == 99) {
            r.goal = bound + 100;
            r.goal_max = true;
        }
        r.note =
            std::to_string(samples.size()) + " runs, ttl 2 s, retry 300 ms, renew every 667 ms";
        out.add(std::move(r));
    }
}

void run_handover(const settings& s, report& out) {
    std::vector<double> samples;
    for (int run = 0; run < s.handover_runs; ++run) {
        const std::string lease = "h" + s.tag + "-" + std::to_string(run);
        const std::string leader_id = "bench-a-" + std::to_string(run);
        // Default timings: ttl 15 s, retry 2 s; only NOTIFY can make it fast.
        watched_elector leader{s, lease, leader_id, ms{15000}, ms{10000}, ms{2000}};
        if (!leader.wait_leading(ms{5000}))
            throw std::runtime_error("handover: first elector did not lead");
        watched_elector follower{s,         lease,     "bench-b-" + std::to_string(run),
                                 ms{15000}, ms{10000}, ms{2000}};
        if (!follower.wait_seen(leader_id, ms{5000}))
            throw std::runtime_error("handover: follower never saw the leader");
        std::this_thread::sleep_for(ms{30}); // let it settle into its wait
        const auto released = steady::now();
        leader.stop(); // ends the term and releases the lease
        const auto led = follower.wait_leading(ms{10000});
        follower.stop();
        if (!led)
            throw std::runtime_error("handover: follower did not lead");
        samples.push_back(std::chrono::duration<double, std::milli>(*led - released).count());
    }
    for (const double p : {50.0, 99.0}) {
        row r;
        r.section = "handover";
        r.figure = std::string{"graceful handover (stop+release -> waiting follower leads) p"} +
                   (p == 50 ? "50" : "99");
        r.unit = "ms";
        r.samples = samples;
        r.value = percentile(samples, p);
        r.baseline = 2000;
        r.baseline_name = "retry period";
        if (p == 50) {
            r.goal = 20;
            r.goal_max = true;
        }
        r.note = std::to_string(samples.size()) + " runs, woken by NOTIFY; ttl 15 s, retry 2 s";
        log("handover p" + std::to_string(static_cast<int>(p)) + ": " + std::to_string(r.value) +
            " ms");
        out.add(std::move(r));
    }
}

} // namespace bench
