/// @file main.cpp
/// @brief pglease_bench: pg_lease side by side with a bare compare-and-swap,
/// unfenced writes, etcd and Redis, in one run on one machine.
///
///   pglease_bench [--pg CONNINFO] [--etcd URL] [--redis HOST:PORT]
///                 [--clients 1,4,16] [--rounds 5] [--seconds 1]
///                 [--failover-runs 30] [--handover-runs 40]
///                 [--scale 10,1000,100000] [--scale-sessions 100]
///                 [--growth-leases 1,1000,100000,1000000]
///                 [--growth-events 0,1000000,10000000] [--growth-fenced 1,10,100]
///                 [--many-leases 100000] [--many-procs 100] [--many-cycles 3]
///                 [--many-ttl-ms 30000]
///                 [--only lease,fence,scale,growth,many,etcd,redis,failover,handover]
///                 [--json FILE] [--smoke]
///
/// Without --pg the PG* environment names the server (with the pg_lease
/// extension created in the database).  Figures are medians over rounds;
/// every comparison is a ratio within this run.  --smoke: a few seconds of
/// every section (harness correctness only, no timing goals checked).
#include "figures.hpp"

#include <cstring>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace {

std::vector<int> int_list(const std::string& text) {
    std::vector<int> out;
    std::stringstream ss{text};
    std::string item;
    while (std::getline(ss, item, ','))
        out.push_back(std::stoi(item));
    if (out.empty())
        throw std::invalid_argument("empty list: " + text);
    return out;
}

bench::settings parse(int argc, char** argv) {
    bench::settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "--pg")
            s.pg_conninfo = value();
        else if (a == "--etcd")
            s.etcd_url = value();
        else if (a == "--redis") {
            const std::string v = value();
            const auto colon = v.rfind(':');
            s.redis_host = v.substr(0, colon);
            if (colon != std::string::npos)
                s.redis_port = std::stoi(v.substr(colon + 1));
        } else if (a == "--clients")
            s.clients = int_list(value());
        else if (a == "--rounds")
            s.rounds = std::stoi(value());
        else if (a == "--seconds")
            s.seconds = std::stod(value());
        else if (a == "--failover-runs")
            s.failover_runs = std::stoi(value());
        else if (a == "--handover-runs")
            s.handover_runs = std::stoi(value());
        else if (a == "--scale")
            s.scale_leases = int_list(value());
        else if (a == "--scale-sessions")
            s.scale_sessions = std::stoi(value());
        else if (a == "--growth-leases")
            s.growth_leases = int_list(value());
        else if (a == "--growth-events")
            s.growth_events = int_list(value());
        else if (a == "--growth-fenced")
            s.growth_fenced = int_list(value());
        else if (a == "--many-leases")
            s.many_leases = std::stoi(value());
        else if (a == "--many-procs")
            s.many_procs = std::stoi(value());
        else if (a == "--many-cycles")
            s.many_cycles = std::stoi(value());
        else if (a == "--many-ttl-ms")
            s.many_ttl_ms = std::stoi(value());
        else if (a == "--only")
            s.only = value();
        else if (a == "--json")
            s.json_path = value();
        else if (a == "--smoke") {
            s.smoke = true;
            s.clients = {1, 3};
            s.rounds = 1;
            s.seconds = 0.2;
            s.failover_runs = 1;
            s.handover_runs = 2;
            s.scale_leases = {10, 200};
            s.scale_sessions = 4;
            s.growth_leases = {1, 300};
            s.growth_events = {0, 3000};
            s.growth_fenced = {1, 3};
            s.many_leases = 2000;
            s.many_procs = 4;
            s.many_cycles = 2;
            s.many_ttl_ms = 3000;
        } else
            throw std::invalid_argument("unknown argument " + a);
    }
    if (s.many_procs < 1 || s.many_leases < s.many_procs || s.many_cycles < 1 ||
        s.many_ttl_ms < 1000)
        throw std::invalid_argument(
            "many: need procs >= 1, leases >= procs, cycles >= 1, ttl >= 1000 ms");
    if (s.rounds < 1 || s.seconds <= 0 || s.seconds > 60 || s.failover_runs < 1 ||
        s.handover_runs < 1)
        throw std::invalid_argument("rounds, seconds (<= 60) and run counts must be positive");
    s.tag = std::to_string(getpid());
    return s;
}

} // namespace

int main(int argc, char** argv) {
    if (argc >= 2 && std::strcmp(argv[1], "--leader-child") == 0)
        return bench::leader_child(argc, argv);
    if (argc >= 2 && std::strcmp(argv[1], "--lease-set-child") == 0)
        return bench::lease_set_child(argc, argv);
    bench::settings s;
    try {
        s = parse(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "pglease_bench: " << e.what() << "\n";
        return 2;
    }
    bench::report out;
    int status = 0;
    try {
        if (s.wants("lease"))
            bench::run_lease_ops(s, out);
        if (s.wants("fence"))
            bench::run_fence(s, out);
        if (s.wants("etcd") && !s.etcd_url.empty())
            bench::run_etcd(s, out);
        if (s.wants("redis") && !s.redis_host.empty())
            bench::run_redis(s, out);
        if (s.wants("handover"))
            bench::run_handover(s, out);
        if (s.wants("failover"))
            bench::run_failover(s, out);
        if (s.wants("scale"))
            bench::run_scale(s, out);
        if (s.wants("growth")) {
            // From the tables as the other sections found them.
            bench::cleanup_pg(s);
            bench::run_growth(s, out);
        }
        if (s.wants("many"))
            bench::run_many_leases(s, out);
    } catch (const std::exception& e) {
        std::cerr << "pglease_bench: " << e.what() << "\n";
        status = 1;
    }
    bench::cleanup_pg(s);
    out.print();
    if (!s.json_path.empty())
        out.write_json(s.json_path, s);
    if (status == 0 && !out.all_positive()) {
        std::cerr << "pglease_bench: a figure came out as zero\n";
        status = 1;
    }
    return status;
}
