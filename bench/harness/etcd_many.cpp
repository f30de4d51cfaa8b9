/// @file etcd_many.cpp
/// @brief etcd's side of section "many": as many leases as pg_lease's side
/// (granted with /v3/lease/grant), kept alive by as many clients (threads,
/// each with its own keep-alive HTTP connection to the JSON gateway, one
/// /v3/lease/keepalive request per lease), round after round: the time of
/// one client's share of a round (p50, p99), of the whole round, and the
/// headroom (ttl/3) / p99. etcd grants through raft (its WAL fsynced);
/// keepalives are NOT persisted: the leader keeps expiry in memory.
#include "etcd_client.hpp"
#include "figures.hpp"
#include "proc_stat.hpp"

#include <mutex>
#include <sstream>
#include <stdexcept>

namespace bench {

namespace {

using ms = std::chrono::milliseconds;

std::string port_of(const std::string& url) {
    const auto colon = url.rfind(':');
    return colon == std::string::npos ? "" : url.substr(colon); // ":2379"
}

std::string fixed1(double v) {
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(1);
    o << v;
    return o.str();
}

} // namespace

double run_etcd_many(const settings& s, report& out) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const auto clients = static_cast<std::size_t>(s.many_procs);
    const auto leases = static_cast<std::size_t>(s.many_leases);
    const double third_ms = static_cast<double>(s.many_ttl_ms) / 3;
    // Each phase ends by its bound, done or not, so the section stays
    // under 3 minutes; what a phase did not finish is scaled (and said so).
    constexpr double grant_bound_s = 75;
    constexpr double round_bound_s = 40;
    // Granted with a TTL long enough that none expires while all are
    // granted (that alone can take longer than ttl); a keepalive costs the
    // same whatever the TTL, and the headroom is taken against ttl / 3.
    constexpr long grant_ttl_s = 3600;

    std::vector<std::unique_ptr<etcd_client>> http;
    for (std::size_t i = 0; i < clients; ++i)
        http.push_back(std::make_unique<etcd_client>(s.etcd_url));
    std::vector<std::vector<std::string>> ids(clients);
    const auto share = [&](std::size_t i) {
        return leases * (i + 1) / clients - leases * i / clients;
    };

    // Grant: durable (a raft proposal each).
    log("many/etcd: granting " + std::to_string(leases) + " leases (TTL " +
        std::to_string(grant_ttl_s) + " s) from " + std::to_string(clients) + " clients");
    const phase_result granted =
        run_phase(clients, grant_bound_s, [&](std::size_t i) -> std::int64_t {
            if (ids[i].size() >= share(i))
                return 0;
            const auto reply = http[i]->post("/v3/lease/grant", {{"TTL", grant_ttl_s}});
            ids[i].push_back(reply.at("ID").get<std::string>());
            return 1;
        });
    const auto held = static_cast<std::size_t>(granted.ops);
    if (held == 0)
        throw std::runtime_error("many/etcd: no lease granted");
    const bool all_granted = held == leases;
    const double grant_ms =
        granted.seconds * 1000 * static_cast<double>(leases) / static_cast<double>(held);

    // Keepalive rounds: each client renews its leases one request each;
    // its time is from the round's start to its last reply (scaled to its
    // full share when it did not finish, or held fewer than its share).
    const auto etcd_pid = find_process("etcd", port_of(s.etcd_url));
    const auto cpu0 = etcd_pid ? process_cpu(*etcd_pid) : std::nullopt;
    std::vector<double> client_ms, round_ms;
    long expired = 0;
    bool scaled = !all_granted;
    const int rounds = std::min(s.many_cycles, 2); // at 100,000 leases one takes tens of seconds
    for (int round = 0; round < rounds; ++round) {
        std::vector<std::size_t> next(clients, 0);
        std::vector<steady::time_point> last(clients);
        std::vector<long> lost(clients, 0);
        const auto start = steady::now();
        const phase_result r =
            run_phase(clients, round_bound_s, [&](std::size_t i) -> std::int64_t {
                if (next[i] >= ids[i].size())
                    return 0;
                const auto reply =
                    http[i]->post("/v3/lease/keepalive", {{"ID", ids[i][next[i]++]}});
                // An expired lease answers without a positive TTL.
                const auto res = reply.value("result", nlohmann::json::object());
                if (std::stol(res.value("TTL", std::string{"0"})) <= 0)
                    ++lost[i];
                last[i] = steady::now();
                return 1;
            });
        for (std::size_t i = 0; i < clients; ++i) {
            expired += lost[i];
            if (next[i] == 0)
                continue;
            const double took = std::chrono::duration<double, std::milli>(last[i] - start).count();
            client_ms.push_back(took * static_cast<double>(share(i)) /
                                static_cast<double>(next[i]));
            scaled = scaled || next[i] < share(i);
        }
        round_ms.push_back(r.seconds * 1000 * static_cast<double>(leases) /
                           static_cast<double>(r.ops));
    }
    const auto cpu1 = etcd_pid ? process_cpu(*etcd_pid) : std::nullopt;
    if (expired > 0)
        throw std::runtime_error("many/etcd: " + std::to_string(expired) +
                                 " keepalives found their lease expired");

    const double p50 = percentile(client_ms, 50);
    const double p99 = percentile(client_ms, 99);
    const double headroom = third_ms / p99;
    const std::string scaling = scaled ? "; SCALED linearly to " + std::to_string(leases) +
                                             " leases: " + std::to_string(held) + " granted in " +
                                             fixed1(grant_bound_s) + " s, rounds bounded at " +
                                             fixed1(round_bound_s) + " s"
                                       : "";
    log("many/etcd: client round p50 " + fixed1(p50) + " ms, p99 " + fixed1(p99) +
        " ms, headroom " + fixed1(headroom) + "x" + scaling);
    const std::string shape =
        std::to_string(leases) + " leases, " + std::to_string(clients) + " clients";
    const auto add = [&](const std::string& figure, double value, const std::string& unit,
                         const std::string& note, std::vector<double> samples) {
        row r;
        r.section = "many_etcd";
        r.figure = figure;
        r.clients = static_cast<int>(clients);
        r.value = value;
        r.unit = unit;
        r.note = note;
        r.samples = std::move(samples);
        out.add(std::move(r));
    };
    add("etcd keepalive round p50 per client (" + shape + ")", p50, "ms",
        "one HTTP keepalive per lease (JSON gateway); NOT persisted" + scaling, client_ms);
    add("etcd keepalive round p99 per client (" + shape + ")", p99, "ms",
        "headroom (ttl/3)/p99 = " + fixed1(headroom) + "x" + scaling, client_ms);
    add("etcd keepalive round, all " + std::to_string(leases) + " (wall)", median(round_ms), "ms",
        "median of " + std::to_string(round_ms.size()) + " rounds" + scaling, round_ms);
    add("etcd headroom (ttl/3) / p99 client round", headroom, "x",
        "same formula as pg_lease's" + scaling, {headroom});
    add("etcd grant " + std::to_string(leases) + " leases", grant_ms, "ms",
        "durable (raft log fsynced); TTL 1 h so none expires while granting" + scaling, {grant_ms});
    if (cpu0 && cpu1)
        add("etcd CPU per keepalive round",
            static_cast<double>((*cpu1 - *cpu0).count()) / 1000.0 / rounds, "ms",
            "the etcd process (gateway included)", {});
    return headroom;
}

} // namespace bench
