/// @file pglease_peer_many.cpp
/// @brief pglease_peer's "many" mode: one lease_set of -leases names (see
/// pglease_peer.cpp for the command line).
#include "peer_args.hpp"

#include <pglease/error.hpp>
#include <pglease/lease_set.hpp>
#include <pqxx/pqxx>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

namespace peer {

int many() {
    const long n = std::stol(get("leases", "1000"));
    pglease::lease_set_config cfg;
    cfg.identity = identity();
    for (long i = 0; i < n; ++i)
        cfg.names.push_back("peers-many-" + get("names", cfg.identity) + "-" + std::to_string(i));
    cfg.ttl = millis("ttl", "30s");
    cfg.renew_deadline = cfg.ttl * 2 / 3;
    cfg.retry_period = std::min(ms{2000}, cfg.ttl / 10);
    cfg.connection.conninfo = get("pg", "");
    cfg.connection.acquire_timeout = cfg.ttl; // 100 processes at once on 2 cores
    // Why each term ended, with when (ms after start) the first of each
    // reason came: a lease given up must say why.
    std::mutex lost_mutex;
    std::map<std::string, std::pair<long, long long>> lost_why;
    const auto t0 = steady::now();
    cfg.callbacks.on_lost = [&](const std::string&, std::int64_t, pglease::lease_loss why) {
        const std::lock_guard lock{lost_mutex};
        auto& [count, first] = lost_why[pglease::to_string(why)];
        if (count++ == 0)
            first = std::chrono::duration_cast<ms>(steady::now() - t0).count();
    };
    pglease::lease_set set{cfg};
    set.start();
    while (set.acquire_rounds() == 0 || set.held_count() < static_cast<std::size_t>(n)) {
        if (steady::now() - t0 > ms{240000}) { // bound: 100 processes on a loaded machine
            std::cerr << "many: held " << set.held_count() << " of " << n << std::endl;
            return 1;
        }
        std::this_thread::sleep_for(ms{20});
    }
    char took[32];
    std::snprintf(took, sizeof took, "%.3f",
                  std::chrono::duration<double>(steady::now() - t0).count());
    say("GRANTED", n, took);
    // The server's word on expiry: a lease lost and granted again has a
    // later acquired_at than the last grant of this first round.
    // By name through the primary key: 100 clients scanning the whole
    // table at once (LIKE) loaded the server enough to stall renewals.
    pqxx::connection check{cfg.connection.conninfo};
    std::string names = "{";
    for (const std::string& name : cfg.names)
        names += (names.size() > 1 ? "," : "") + name;
    names += "}";
    const std::string granted_by =
        pqxx::nontransaction{check}
            .exec_params1("SELECT max(acquired_at)::text FROM leases WHERE name = ANY($1::text[])",
                          names)[0]
            .as<std::string>();
    // Each renew round trip while held (polled: rounds are ttl/3 apart).
    std::vector<long long> cycles;
    auto seen = set.renew_rounds();
    wait_resign(millis("hold", "300s"), [&] {
        if (set.renew_rounds() != seen) {
            seen = set.renew_rounds();
            cycles.push_back(
                std::chrono::duration_cast<std::chrono::microseconds>(set.last_renew_latency())
                    .count());
        }
    });
    // Both at the end of the hold: what the client holds, and (asked after,
    // of that instant: a loaded server may answer seconds later) which
    // grants of the first round were still valid on the server.
    const long held = static_cast<long>(set.held_count());
    const auto held_at = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    const long valid =
        pqxx::nontransaction{check}
            .exec_params1(
                "SELECT count(*) FROM leases WHERE name = ANY($1::text[]) AND holder = $2 "
                "AND expires_at > to_timestamp($4::float8 / 1e6) "
                "AND acquired_at <= $3::timestamptz",
                names, cfg.identity, granted_by, held_at)[0]
            .as<long>();
    std::string line = "CYCLES";
    for (const long long us : cycles)
        line += " " + std::to_string(us);
    say(line);
    say("HELD", n, "lost", n - held, "expired", n - valid, "keepalive_answers", set.renew_rounds());
    {
        const std::lock_guard lock{lost_mutex};
        // One line: why terms ended (count, when the first did), the rounds.
        std::ostringstream ended;
        for (const auto& [why, seen_at] : lost_why)
            ended << why << "=" << seen_at.first << "@" << seen_at.second << "ms ";
        ended << "renews=" << set.renew_rounds() << " acquires=" << set.acquire_rounds()
              << " last_renew_ms="
              << std::chrono::duration_cast<ms>(set.last_renew_latency()).count();
        say("LOST", ended.str());
    }
    set.stop(); // releases them all
    return 0;
}

} // namespace peer
