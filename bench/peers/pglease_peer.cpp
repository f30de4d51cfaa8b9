/// @file pglease_peer.cpp
/// @brief pg_lease as its users run it, with the command line of the other
/// peers of bench/peers (README.md there): the C++ client's elector, its
/// run_fenced() writes, lease_set for many leases, and the SQL functions
/// for the throughput figures (libpqxx, prepared statements).
///
///   pglease_peer elect -pg CONNINFO -name N -id ID -ttl 2s -retry 300ms [-table T [-pause-at N]]
///       elector (renew deadline 3/4 ttl); LEADER when on_started_leading
///       runs; writes into T with run_fenced() while leading; "resign" on
///       stdin stops the elector (releases: NOTIFY wakes the follower);
///       "resign ID" hands the lease to identity ID first (yield_to).
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
#include "peer_args.hpp"

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

namespace peer {
namespace {

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
    // "resign ID": the planned handover of pg_lease's users (yield_to a
    // named successor, which leads on the handover's NOTIFY without a
    // commit of its own); plain "resign": stop() releases the lease
    if (const std::string successor = wait_resign(); !successor.empty()) {
        const auto r = elector.yield_to(successor);
        say("HANDED", now_us(), r.new_epoch, r.message.empty() ? "-" : r.message);
    }
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

} // namespace
} // namespace peer

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
            peer::opt[k] = "1";
            continue;
        }
        if (i + 1 >= argc) {
            std::cerr << "missing value for " << argv[i] << std::endl;
            return 2;
        }
        peer::opt[k] = argv[++i];
    }
    const std::string mode = argv[1];
    try {
        if (mode == "elect")
            return peer::elect();
        if (mode == "ops")
            return peer::ops();
        if (mode == "many")
            return peer::many();
    } catch (const std::exception& e) {
        std::cerr << "pglease_peer: " << e.what() << std::endl;
        return 1;
    }
    std::cerr << "pglease_peer: unknown mode " << mode << std::endl;
    return 2;
}
