/// @file lease_set_child.cpp
/// @brief `pglease_bench --lease-set-child CONNINFO IDENTITY PREFIX FIRST COUNT TTL_MS CYCLES`:
/// one process of the many-leases figure. It holds leases PREFIX<FIRST> ..
/// PREFIX<FIRST+COUNT-1> with one pglease::lease_set and talks to the
/// parent in lines:
///
///   child -> "held MS"                 all COUNT held, MS after start
///   parent -> "go"                     start counting renewal cycles
///   child -> "cycles US US ..."        the next CYCLES renew round trips (send to reply)
///   child -> "rounds RENEW ACQUIRE"    round trips of each kind so far
///   parent -> "stop"
///   child -> "stopped MS RELEASES"     stop() (one release round trip) took MS
///
/// Every wait is bounded; on a timeout it prints "error ..." and exits 1.
#include "figures.hpp"

#include <pglease/lease_set.hpp>

#include <iostream>
#include <poll.h>
#include <string>
#include <thread>
#include <unistd.h>

namespace bench {

namespace {

using ms = std::chrono::milliseconds;

/// A line from stdin within @p timeout (nullopt on timeout or EOF).
std::optional<std::string> read_stdin_line(ms timeout) {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (std::cin.rdbuf()->in_avail() <= 0 && poll(&p, 1, static_cast<int>(timeout.count())) <= 0)
        return std::nullopt;
    std::string line;
    if (!std::getline(std::cin, line))
        return std::nullopt;
    return line;
}

int fail(const std::string& why) {
    std::cout << "error " << why << std::endl;
    return 1;
}

} // namespace

int lease_set_child(int argc, char** argv) {
    if (argc < 9)
        return fail("usage: --lease-set-child CONNINFO IDENTITY PREFIX FIRST COUNT TTL_MS CYCLES");
    const std::string conninfo = argv[2], identity = argv[3], prefix = argv[4];
    const long first = std::stol(argv[5]), count = std::stol(argv[6]);
    const ms ttl{std::stol(argv[7])};
    const int cycles = std::stoi(argv[8]);

    pglease::lease_set_config cfg;
    for (long i = first; i < first + count; ++i)
        cfg.names.push_back(prefix + std::to_string(i));
    cfg.identity = identity;
    cfg.ttl = ttl;
    cfg.renew_deadline = ttl * 2 / 3; // 20 s at ttl 30 s
    cfg.retry_period = std::min(ms{2000}, ttl / 10);
    cfg.connection.conninfo = conninfo;
    cfg.connection.application_name = "pglease-bench-many";
    // 100 processes acquiring 1,000 leases each at once on 2 cores: let the
    // first acquire take its time rather than be cancelled and retried.
    cfg.connection.acquire_timeout = ttl;
    const auto interval = cfg.renew_interval();

    const auto start = steady::now();
    pglease::lease_set set{cfg};
    set.start();
    const auto held_by = start + ms{120000};
    while (set.acquire_rounds() == 0 || set.held_count() < static_cast<std::size_t>(count)) {
        if (steady::now() >= held_by)
            return fail("held " + std::to_string(set.held_count()) + " of " +
                        std::to_string(count));
        std::this_thread::sleep_for(ms{20});
    }
    std::cout << "held " << std::chrono::duration_cast<ms>(steady::now() - start).count()
              << std::endl;

    const auto go = read_stdin_line(ms{180000});
    if (!go || *go != "go")
        return fail("no go from the parent");
    // The next `cycles` renew rounds: poll the counter (an atomic: cheap),
    // read each round's latency (rounds are interval apart, polls 50 ms, so
    // that the polling costs next to nothing).
    std::vector<long long> took;
    auto seen = set.renew_rounds();
    const auto cycles_by = steady::now() + interval * (cycles + 2) + ms{10000};
    while (static_cast<int>(took.size()) < cycles) {
        if (steady::now() >= cycles_by)
            return fail("only " + std::to_string(took.size()) + " renew cycles");
        const auto now_rounds = set.renew_rounds();
        if (now_rounds != seen) {
            if (set.held_count() != static_cast<std::size_t>(count))
                return fail("lost leases: " + std::to_string(set.held_count()) + " held");
            seen = now_rounds;
            took.push_back(
                std::chrono::duration_cast<std::chrono::microseconds>(set.last_renew_latency())
                    .count());
        }
        std::this_thread::sleep_for(ms{50});
    }
    std::cout << "cycles";
    for (const long long us : took)
        std::cout << ' ' << us;
    std::cout << std::endl;
    std::cout << "rounds " << set.renew_rounds() << ' ' << set.acquire_rounds() << std::endl;

    const auto stop = read_stdin_line(ms{180000});
    if (!stop || *stop != "stop")
        return fail("no stop from the parent");
    const auto t0 = steady::now();
    set.stop();
    std::cout << "stopped " << std::chrono::duration_cast<ms>(steady::now() - t0).count() << ' '
              << set.release_rounds() << std::endl;
    return 0;
}

} // namespace bench
