/// @file pglease_peer.cpp
/// @brief pg_lease as its users run it, with the command line of the other
/// peers of bench/peers (README.md there): the C++ client's elector, its
/// run_fenced() writes, lease_set for many leases, and the SQL functions
/// for the throughput figures (libpqxx, prepared statements).
///
///   pglease_peer elect -pg CONNINFO -name N -id ID -ttl 2s -retry 300ms [-table T [-pause-at N]]
///       elector (renew deadline 3/4 ttl); LEADER when on_started_leading
///       runs; writes into T with run_fenced() while leading; "resign" on
///       stdin stops the elector (releases: NOTIFY wakes the follower).
///       LOST: without -table when the term's stop token fires (the
///       elector's own deadline), else at on_stopped_leading; the elector
///       campaigns on after a loss by itself (-rejoin is accepted, a no-op).
///   pglease_peer ops -pg CONNINFO -op cycle|renew|renew-many -clients N -seconds S
///       cycle: lease_acquire + lease_release, each client cycling over 100
///       leases of its own; renew: lease_renew over 100 held leases;
///       renew-many: lease_renew_many of the 100 in one call (counts 100).
///   pglease_peer many -pg CONNINFO -id ID [-names PREFIX] -leases 1000 -ttl 30s -hold 300s
///       one lease_set: one acquire_many, then one lease_renew_many per cycle,
///       until "resign" on stdin (or the bound); CYCLES: each renew round
///       trip's send-to-reply time; HELD: "expired" counts the leases the
///       server no longer shows as granted to us since the start.
#include <pglease/elector.hpp>
#include <pglease/error.hpp>
#include <pglease/lease_set.hpp>
#include <pqxx/pqxx>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using ms = std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

std::map<std::string, std::string> opt;

std::string get(const std::string& k, const std::string& def) {
    const auto it = opt.find(k);
    return it == opt.end() ? def : it->second;
}

/// Durations as the Go peers take them: 2s, 300ms, 1.5s.
ms millis(const std::string& k, const std::string& def) {
    const std::string v = get(k, def);
    if (v.size() > 2 && v.compare(v.size() - 2, 2, "ms") == 0)
        return ms{std::stol(v.substr(0, v.size() - 2))};
    if (!v.empty() && v.back() == 's')
        return ms{static_cast<long>(std::stod(v.substr(0, v.size() - 1)) * 1000)};
    return ms{std::stol(v)};
}

std::mutex out_mutex;

template <typename... T>
void say(const T&... fields) {
    std::lock_guard<std::mutex> lock{out_mutex};
    bool first = true;
    ((std::cout << (first ? "" : " ") << fields, first = false), ...);
    std::cout << std::endl;
}

long long now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string identity() {
    return get("id", "pg" + std::to_string(getpid()));
}

/// Blocks until "resign" (or EOF) on stdin, at most `bound`; each (at most
/// 50 ms apart) calls tick, so the wait can watch something.
void wait_resign(ms bound = ms{120000}, const std::function<void()>& tick = {}) {
    std::atomic<bool> done{false};
    std::thread reader([&] {
        std::string line;
        while (std::getline(std::cin, line) && line != "resign") {
        }
        done = true;
    });
    reader.detach(); // a reader still blocked at the 120 s bound ends with the process
    const auto until = steady::now() + bound;
    while (!done && steady::now() < until) {
        std::this_thread::sleep_for(tick ? ms{50} : ms{1});
        if (tick)
            tick();
    }
}

int elect() {
    pglease::elector_config cfg;
    cfg.lease_name = get("name", "peers");
    cfg.identity = identity();
    cfg.ttl = millis("ttl", "2s");
    cfg.renew_deadline = cfg.ttl * 3 / 4;
    cfg.retry_period = millis("retry", "300ms");
    cfg.connection.conninfo = get("pg", "");
    const std::string table = get("table", "");
    const int pause_at = std::stoi(get("pause-at", "0"));
    const ms gap = millis("write-gap", "5ms");
    pglease::elector* self = nullptr;
    // LOST once per term: at the stop token (the elector's word, by its
    // clock alone) when there is no work, else at on_stopped_leading.
    std::atomic<bool> said_lost{false};

    cfg.callbacks.on_started_leading = [&](std::int64_t epoch, const pglease::stop_token& stop) {
        said_lost = false;
        say("LEADER", now_us(), epoch);
        if (table.empty()) {
            stop.wait();
            said_lost = true;
            say("LOST", now_us(), "stop_token");
            return;
        }
        // The leader's work: one fenced INSERT per write while leading.
        pqxx::connection app{cfg.connection.conninfo};
        app.prepare("w", "INSERT INTO " + table + " (writer, seq) VALUES ($1, $2)");
        int seq = 0;
        const auto until = steady::now() + ms{60000};
        while (!stop.stop_requested() && steady::now() < until) {
            ++seq;
            if (seq == pause_at) {
                say("PAUSING", now_us());
                std::raise(SIGSTOP); // between the check (stop_token) and the write
                // The write that was on its way when the pause hit goes to
                // the database as it is, with no second look at the
                // elector: the token it carries is all the fence sees.
                try {
                    pqxx::work tx{app};
                    tx.exec_params("SELECT lease_use($1, $2)", cfg.lease_name, epoch);
                    tx.exec_prepared0("w", cfg.identity, seq);
                    tx.commit();
                } catch (const pqxx::sql_error& e) {
                    say("WRITE_REFUSED", now_us(), e.sqlstate());
                    break;
                }
                continue;
            }
            try {
                self->run_fenced(app, [&](pqxx::transaction_base& tx) {
                    tx.exec_prepared0("w", cfg.identity, seq);
                });
            } catch (const pglease::lease_lost& e) {
                say("WRITE_REFUSED", now_us(), "lease_lost");
                break;
            }
            stop.wait_for(gap);
        }
        say("STOPPED_WRITING", now_us(), seq);
        stop.wait();
    };
    cfg.callbacks.on_stopped_leading = [&] {
        if (!said_lost.exchange(true))
            say("LOST", now_us(), "stopped_leading");
    };

    pglease::elector elector{cfg};
    self = &elector;
    say("CAMPAIGN", now_us());
    elector.start();
    wait_resign();
    elector.stop(); // ends the term, releases
    say("RESIGNED", now_us());
    return 0;
}

int ops() {
    const std::string op = get("op", "cycle");
    const int clients = std::stoi(get("clients", "1"));
    const long max_ops = std::stol(get("max-ops", "1000000"));
    const auto length = std::chrono::duration<double>(std::stod(get("seconds", "1")));
    const std::string id = identity();
    constexpr int per_client = 100;

    std::vector<std::unique_ptr<pqxx::connection>> conns;
    std::vector<std::vector<std::int64_t>> epochs(clients);
    for (int c = 0; c < clients; ++c) {
        conns.push_back(std::make_unique<pqxx::connection>(get("pg", "")));
        auto& db = *conns.back();
        const std::string holder = id + "-" + std::to_string(c);
        db.prepare("acquire", "SELECT acquired, epoch FROM lease_acquire($1, $2, '60 s')");
        db.prepare("release", "SELECT lease_release($1, $2, $3)");
        db.prepare("renew", "SELECT lease_renew($1, $2, $3)");
        db.prepare("renew_many",
                   "SELECT count(expires_at) FROM lease_renew_many($1::text[], $2, $3::bigint[])");
        pqxx::nontransaction tx{db};
        for (int k = 0; k < per_client; ++k) {
            const std::string name = "peers-ops-" + holder + "-" + std::to_string(k);
            const auto r = tx.exec_prepared1("acquire", name, holder);
            epochs[c].push_back(r[1].as<std::int64_t>());
            if (op == "cycle")
                tx.exec_prepared1("release", name, holder, epochs[c].back());
        }
    }
    std::vector<long> counts(clients, 0);
    std::atomic<bool> failed{false};
    std::atomic<bool> go{false};
    steady::time_point start;
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&, c] {
            auto& db = *conns[c];
            const std::string holder = id + "-" + std::to_string(c);
            std::vector<std::string> names;
            std::string name_array = "{", epoch_array = "{"; // array literals for renew_many
            for (int k = 0; k < per_client; ++k) {
                names.push_back("peers-ops-" + holder + "-" + std::to_string(k));
                name_array += (k ? "," : "") + names.back();
                epoch_array += (k ? "," : "") + std::to_string(epochs[c][k]);
            }
            name_array += "}";
            epoch_array += "}";
            while (!go)
                std::this_thread::yield();
            const auto until = start + std::chrono::duration_cast<steady::duration>(length);
            pqxx::nontransaction tx{db};
            try {
                for (long i = 0; counts[c] < max_ops && steady::now() < until; ++i) {
                    const std::string& name = names[i % per_client];
                    if (op == "cycle") {
                        const auto r = tx.exec_prepared1("acquire", name, holder);
                        if (!r[0].as<bool>() ||
                            !tx.exec_prepared1("release", name, holder, r[1].as<std::int64_t>())[0]
                                 .as<bool>())
                            throw std::runtime_error("cycle failed on " + name);
                        counts[c] += 1;
                    } else if (op == "renew") {
                        if (tx.exec_prepared1("renew", name, holder, epochs[c][i % per_client])[0]
                                .is_null())
                            throw std::runtime_error("renew failed on " + name);
                        counts[c] += 1;
                    } else if (op == "renew-many") {
                        const auto n =
                            tx.exec_prepared1("renew_many", name_array, holder, epoch_array)[0]
                                .as<long>();
                        if (n != per_client)
                            throw std::runtime_error("renew_many renewed " + std::to_string(n));
                        counts[c] += per_client;
                    } else {
                        throw std::runtime_error("unknown op " + op);
                    }
                }
            } catch (const std::exception& e) {
                std::cerr << "ops " << op << ": " << e.what() << std::endl;
                failed = true;
            }
        });
    }
    start = steady::now();
    go = true;
    for (auto& t : threads)
        t.join();
    const double elapsed = std::chrono::duration<double>(steady::now() - start).count();
    if (failed)
        return 1;
    long total = 0;
    for (const long n : counts)
        total += n;
    char line[128];
    std::snprintf(line, sizeof line, "%d %ld %.3f %.0f", clients, total, elapsed,
                  static_cast<double>(total) / elapsed);
    say("OPS", op, line);
    return 0;
}

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

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: pglease_peer elect|ops|many -flags" << std::endl;
        return 2;
    }
    for (int i = 2; i < argc; ++i) {
        std::string k = argv[i];
        while (!k.empty() && k[0] == '-')
            k.erase(0, 1);
        if (k == "guard" || k == "rejoin") { // rejoin: the elector campaigns on by itself
            opt[k] = "1";
            continue;
        }
        if (i + 1 >= argc) {
            std::cerr << "missing value for " << argv[i] << std::endl;
            return 2;
        }
        opt[k] = argv[++i];
    }
    const std::string mode = argv[1];
    try {
        if (mode == "elect")
            return elect();
        if (mode == "ops")
            return ops();
        if (mode == "many")
            return many();
    } catch (const std::exception& e) {
        std::cerr << "pglease_peer: " << e.what() << std::endl;
        return 1;
    }
    std::cerr << "pglease_peer: unknown mode " << mode << std::endl;
    return 2;
}
