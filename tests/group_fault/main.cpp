/// @file main.cpp
/// @brief pglease_group_fault: 8 member processes of one lease group over
/// 256 shards on the server of the PG* variables; members are killed
/// (SIGKILL, then replaced) and paused (SIGSTOP for longer than the ttl,
/// then SIGCONT). After each fault the assignment must converge, balanced
/// within 10% of ideal, every shard owned again within ttl + retry period
/// (+ slack); at the end lease_events and the fenced writes must show no
/// shard with two holders at once. With --net 1 each member runs on a host
/// of its own (PGLEASE_NET_HOSTS="ns=addr ...", made by net.sh) and every
/// third fault cuts a member's host off the network (nftables, both ways)
/// for longer than the ttl, then heals it: the others take its shards,
/// and it gets its share back without a restart.
///
///   pglease_group_fault [--members N] [--shards N] [--faults N] [--seed N] [--net 1]
#include "checks.hpp"
#include "fleet.hpp"
#include "member.hpp"
#include "pglease/group.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <thread>

#include <unistd.h>

namespace pglease::group_fault {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

struct settings {
    int members = 8;
    int shards = 256;
    int faults = 6;
    unsigned seed = std::random_device{}();
    int write_ms = 1000;
    bool net = false;
};

/// The hosts net.sh made: PGLEASE_NET_HOSTS="ns=addr ns=addr ...".
std::vector<fleet::host> hosts_from_env() {
    const char* env = std::getenv("PGLEASE_NET_HOSTS");
    std::vector<fleet::host> out;
    std::string word;
    for (const char* c = env != nullptr ? env : "";; ++c) {
        if (*c != ' ' && *c != '\0') {
            word += *c;
            continue;
        }
        if (const auto eq = word.find('='); eq != std::string::npos)
            out.push_back({word.substr(0, eq), word.substr(eq + 1)});
        word.clear();
        if (*c == '\0')
            break;
    }
    if (out.empty())
        throw std::invalid_argument{"--net needs PGLEASE_NET_HOSTS (tests/group_fault/net.sh)"};
    return out;
}

double seconds(steady::duration d) {
    return std::chrono::duration<double>(d).count();
}

class controller {
public:
    explicit controller(settings s)
        : m_s{s}
        , m_group{"gf-" + std::to_string(::getpid())}
        , m_shards{numbered_shards("s", static_cast<std::size_t>(s.shards))}
        , m_conn{""}
        , m_fleet{m_group, s.shards, s.write_ms}
        , m_rng{s.seed} {}

    int run();

private:
    void setup();
    std::map<std::string, std::string> holders();
    /// Waits until the shards are held as the assignment over @p live
    /// says, and balanced; tracks the longest time a shard was unowned.
    /// Returns the time it took, or a negative value after @p bound.
    double converge(const std::vector<std::string>& live, steady::time_point since,
                    steady::duration bound);
    void note_unowned(const std::map<std::string, std::string>& now);
    int moved(const std::map<std::string, std::string>& a,
              const std::map<std::string, std::string>& b) const;
    void fail(const std::string& why) {
        std::cout << "FAIL: " << why << "\n";
        ++m_failures;
    }

    settings m_s;
    std::string m_group;
    std::vector<std::string> m_shards;
    pqxx::connection m_conn;
    fleet m_fleet;
    std::mt19937 m_rng;
    std::map<std::string, steady::time_point> m_unowned_since;
    steady::duration m_max_unowned{0};
    int m_failures = 0;
};

void controller::setup() {
    pqxx::work tx{m_conn};
    tx.exec0("DROP TABLE IF EXISTS gf_writes");
    tx.exec0("CREATE TABLE gf_writes (id bigserial, shard int NOT NULL, epoch bigint, "
             "member text NOT NULL, at timestamptz DEFAULT clock_timestamp()) "
             "PARTITION BY LIST (shard)");
    for (int i = 0; i < m_s.shards; ++i) {
        const std::string part = "gf_writes_" + std::to_string(i);
        tx.exec0("CREATE TABLE " + part + " PARTITION OF gf_writes FOR VALUES IN (" +
                 std::to_string(i) + ")");
        tx.exec_params("SELECT lease_fence($1::regclass, $2)", part,
                       group_shard_lease(m_group, m_shards[static_cast<std::size_t>(i)]));
    }
    tx.commit();
}

std::map<std::string, std::string> controller::holders() {
    pqxx::nontransaction tx{m_conn};
    std::map<std::string, std::string> out;
    for (const auto& row : tx.exec_params(
             "SELECT shard, holder FROM lease_group_shards WHERE group_name = $1 AND valid",
             m_group))
        out[row[0].as<std::string>()] = row[1].as<std::string>();
    return out;
}

void controller::note_unowned(const std::map<std::string, std::string>& now) {
    const auto t = steady::now();
    for (const auto& shard : m_shards) {
        if (now.count(shard) == 0) {
            m_unowned_since.emplace(shard, t);
            continue;
        }
        const auto it = m_unowned_since.find(shard);
        if (it != m_unowned_since.end()) {
            m_max_unowned = std::max(m_max_unowned, t - it->second);
            m_unowned_since.erase(it);
        }
    }
}

double controller::converge(const std::vector<std::string>& live, steady::time_point since,
                            steady::duration bound) {
    std::vector<group_member_info> members;
    for (const auto& m : live)
        members.push_back({m, 1});
    const auto owners = assign_shards(m_shards, members);
    const double ideal = static_cast<double>(m_s.shards) / static_cast<double>(live.size());
    while (steady::now() < since + bound) {
        const auto now = holders();
        note_unowned(now);
        bool ok = true;
        std::map<std::string, int> count;
        for (std::size_t i = 0; i < m_shards.size() && ok; ++i) {
            const auto it = now.find(m_shards[i]);
            ok = it != now.end() && it->second == owners[i];
            if (ok)
                ++count[it->second];
        }
        for (const auto& [m, c] : count)
            ok = ok && std::abs(c - ideal) <= 0.1 * ideal;
        if (ok)
            return seconds(steady::now() - since);
        std::this_thread::sleep_for(50ms);
    }
    // Not converged: show what the server has.
    {
        pqxx::nontransaction tx{m_conn};
        for (const auto& row : tx.exec_params(
                 "SELECT member, valid, shards FROM lease_group_members WHERE group_name = $1 "
                 "ORDER BY member",
                 m_group))
            std::cout << "  member " << row[0].c_str() << " valid " << row[1].c_str() << " shards "
                      << row[2].c_str() << "\n";
    }
    const auto now = holders();
    int wrong = 0;
    for (std::size_t i = 0; i < m_shards.size(); ++i) {
        const auto it = now.find(m_shards[i]);
        if (it == now.end() || it->second != owners[i]) {
            if (++wrong <= 5)
                std::cout << "  " << m_shards[i] << " held by "
                          << (it == now.end() ? std::string{"nobody"} : it->second)
                          << ", assigned to " << owners[i] << "\n";
        }
    }
    std::cout << "  " << wrong << " shards not where the assignment puts them\n";
    return -1;
}

int controller::moved(const std::map<std::string, std::string>& a,
                      const std::map<std::string, std::string>& b) const {
    int n = 0;
    for (const auto& shard : m_shards) {
        const auto x = a.find(shard);
        const auto y = b.find(shard);
        n += (x == a.end() || y == b.end() || x->second != y->second) ? 1 : 0;
    }
    return n;
}

int controller::run() {
    std::cout << "group " << m_group << ": " << m_s.members << " members, " << m_s.shards
              << " shards, " << m_s.faults << " faults, seed " << m_s.seed << "\n";
    setup();
    const steady::duration ttl = std::chrono::milliseconds{timing::ttl_ms};
    const steady::duration retry = std::chrono::milliseconds{timing::retry_ms};
    const steady::duration bound = 2 * ttl + 1s; // "about 2 x ttl", with slack for 2 cores
    if (m_s.net)
        m_fleet.use_hosts(hosts_from_env());
    std::vector<std::string> live;
    int next_id = 0;
    const auto new_id = [&] { return "m" + std::to_string(next_id++); };
    for (int i = 0; i < m_s.members; ++i) {
        live.push_back(new_id());
        m_fleet.spawn(live.back());
    }
    const double start = converge(live, steady::now(), 30s);
    std::cout << "start: converged in " << start << " s\n";
    if (start < 0)
        fail("no convergence at start");

    std::vector<double> kill_times, rejoin_times, pause_times, resume_times, cut_times, heal_times;
    int moved_kill = 0, moved_join = 0, min_kill = 0, min_join = 0;
    for (int f = 0; f < m_s.faults && m_failures == 0; ++f) {
        std::uniform_int_distribution<std::size_t> pick{0, live.size() - 1};
        const std::string victim = live[pick(m_rng)];
        auto rest = live;
        rest.erase(std::find(rest.begin(), rest.end(), victim));
        const auto before = holders();
        const int share = static_cast<int>(std::count_if(
            before.begin(), before.end(), [&](const auto& h) { return h.second == victim; }));
        // An outage longer than the ttl (SIGSTOP, or a cut that leaves its
        // sockets open): the others take its shards; after it ends the
        // member rejoins and gets its share back, without a restart.
        const auto outage = [&](const char* begin, const char* end,
                                const std::function<void()>& begin_it,
                                const std::function<void()>& end_it, std::vector<double>& during,
                                std::vector<double>& after) {
            const auto t = steady::now();
            begin_it();
            const double p = converge(rest, t, bound);
            std::cout << begin << " " << victim << ": converged in " << p << " s\n";
            if (p < 0)
                fail(std::string{"no convergence after "} + begin + " " + victim);
            during.push_back(p);
            std::this_thread::sleep_for(
                std::max(steady::duration{0}, t + ttl + 1s - steady::now()));
            const auto c = steady::now();
            end_it();
            const double r = converge(live, c, bound);
            std::cout << end << " " << victim << ": converged in " << r << " s\n";
            if (r < 0)
                fail(std::string{"no convergence after "} + end + " " + victim);
            after.push_back(r);
        };
        if (m_s.net && f % 3 == 2) {
            outage(
                "cut", "heal", [&] { m_fleet.cut(victim, true); },
                [&] { m_fleet.cut(victim, false); }, cut_times, heal_times);
        } else if (f % 2 == 0) {
            // SIGKILL, then a replacement joins under a new identity.
            const auto t = steady::now();
            m_fleet.kill(victim);
            const double k = converge(rest, t, bound);
            std::cout << "kill " << victim << ": converged in " << k << " s\n";
            if (k < 0)
                fail("no convergence after killing " + victim);
            kill_times.push_back(k);
            const auto after_kill = holders();
            moved_kill += moved(before, after_kill);
            min_kill += share;
            live = rest;
            live.push_back(new_id());
            const auto j = steady::now();
            m_fleet.spawn(live.back());
            const double r = converge(live, j, bound);
            std::cout << "join " << live.back() << ": converged in " << r << " s\n";
            if (r < 0)
                fail("no convergence after " + live.back() + " joined");
            rejoin_times.push_back(r);
            moved_join += moved(after_kill, holders());
            min_join += m_s.shards / static_cast<int>(live.size());
        } else {
            outage(
                "pause", "resume", [&] { m_fleet.pause(victim); }, [&] { m_fleet.resume(victim); },
                pause_times, resume_times);
        }
    }
    if (!m_fleet.stop_all(15))
        fail("a member did not stop cleanly on SIGTERM");

    long grants = 0, writes = 0;
    const auto bad = check_history(m_conn, group_prefix(m_group) + "shard/", grants, writes);
    for (const auto& b : bad)
        fail(b);
    const auto worst = [](const std::vector<double>& v) {
        return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
    };
    std::cout << "figures: convergence (max) after kill " << worst(kill_times) << " s, join "
              << worst(rejoin_times) << " s, pause " << worst(pause_times) << " s, resume "
              << worst(resume_times) << " s, cut " << worst(cut_times) << " s, heal "
              << worst(heal_times) << " s (ttl " << seconds(ttl) << " s)\n"
              << "figures: shards moved by kills " << moved_kill << " (minimum " << min_kill
              << "), by joins " << moved_join << " (minimum " << min_join << ")\n"
              << "figures: longest time a shard was unowned " << seconds(m_max_unowned)
              << " s (bound ttl + retry + 1 s = " << seconds(ttl + retry + 1s) << " s)\n"
              << "checked " << grants << " grants and " << writes
              << " fenced writes: " << bad.size() << " violations\n";
    if (m_max_unowned > ttl + retry + 1s)
        fail("a shard was unowned longer than ttl + retry + 1 s");
    if (writes == 0)
        fail("no fenced writes recorded");
    std::cout << (m_failures == 0 ? "PASS" : "FAIL") << "\n";
    return m_failures == 0 ? 0 : 1;
}

} // namespace
} // namespace pglease::group_fault

int main(int argc, char** argv) {
    using namespace pglease::group_fault;
    try {
        const std::vector<std::string> args(argv + 1, argv + argc);
        if (args.size() == 5 && args[0] == "--member")
            return run_member(args[1], std::stoi(args[2]), args[3], std::stoi(args[4]));
        settings s;
        for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
            const int v = std::stoi(args[i + 1]);
            if (args[i] == "--members")
                s.members = v;
            else if (args[i] == "--shards")
                s.shards = v;
            else if (args[i] == "--faults")
                s.faults = v;
            else if (args[i] == "--seed")
                s.seed = static_cast<unsigned>(v);
            else if (args[i] == "--net")
                s.net = v != 0;
            else
                throw std::invalid_argument{"unknown option " + args[i]};
        }
        controller c{s};
        return c.run();
    } catch (const std::exception& e) {
        std::cerr << "pglease_group_fault: " << e.what() << "\n";
        return 2;
    }
}
