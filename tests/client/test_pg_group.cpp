/// @file test_pg_group.cpp
/// @brief Lease groups against the real server: members join, leave, lose
/// their session and die (SIGKILL of a child process); the assignment
/// converges within the bound, every shard is owned again, and no shard's
/// work ever ran in two members at once.
#include "pg_fixture.hpp"
#include "pglease/group.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <csignal>
#include <iostream>
#include <map>
#include <mutex>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr std::size_t shard_count = 48;
constexpr auto ttl = 2000ms;
constexpr auto retry = 300ms;

/// One term of shard work as this process saw it (steady clock).
struct interval {
    std::string member;
    steady::time_point start;
    steady::time_point end = steady::time_point::max();
};

/// Shard work of every in-process member: it records when it ran.
class history {
public:
    group_callbacks callbacks(const std::string& member) {
        group_callbacks cb;
        cb.on_shard_started = [this, member](const std::string& shard, std::int64_t,
                                             stop_token stop) {
            std::size_t index = 0;
            {
                const std::lock_guard lock{m_mutex};
                m_runs[shard].push_back({member, steady::now()});
                index = m_runs[shard].size() - 1;
            }
            stop.wait();
            const std::lock_guard lock{m_mutex};
            m_runs[shard][index].end = steady::now();
        };
        return cb;
    }

    /// Pairs of overlapping work on one shard by two members.
    std::vector<std::string> overlaps() const {
        const std::lock_guard lock{m_mutex};
        std::vector<std::string> out;
        for (const auto& [shard, runs] : m_runs)
            for (std::size_t i = 0; i < runs.size(); ++i)
                for (std::size_t j = i + 1; j < runs.size(); ++j)
                    if (runs[i].member != runs[j].member && runs[i].start < runs[j].end &&
                        runs[j].start < runs[i].end)
                        out.push_back(shard + ": " + runs[i].member + " and " + runs[j].member);
        return out;
    }

private:
    mutable std::mutex m_mutex;
    std::map<std::string, std::vector<interval>> m_runs;
};

class pg_group : public pg_test {
protected:
    void SetUp() override {
        pg_test::SetUp();
        m_group = unique_name("grp") + "/x'y";
        m_shards = numbered_shards("s", shard_count);
    }

    group_config config(const std::string& member) {
        group_config c;
        c.group = m_group;
        c.shards = m_shards;
        c.identity = member;
        c.ttl = ttl;
        c.renew_deadline = 1200ms;
        c.retry_period = retry;
        c.connection = env_options("pglease-group-" + member);
        c.callbacks = m_history.callbacks(member);
        return c;
    }

    /// shard -> holder of every valid shard lease of the group.
    std::map<std::string, std::string> holders() {
        pqxx::nontransaction tx{admin()};
        std::map<std::string, std::string> out;
        for (const auto& row : pqxx_compat::exec_params(
                 tx, "SELECT shard, holder FROM lease_group_shards WHERE group_name = $1 AND valid",
                 m_group))
            out[row[0].as<std::string>()] = row[1].as<std::string>();
        return out;
    }

    /// True when every shard is held by the member the assignment over
    /// @p live gives it.
    bool converged(const std::vector<std::string>& live) {
        std::vector<group_member_info> members;
        for (const auto& m : live)
            members.push_back({m, 1});
        const auto owners = assign_shards(m_shards, members);
        const auto now = holders();
        for (std::size_t i = 0; i < m_shards.size(); ++i) {
            const auto it = now.find(m_shards[i]);
            if (it == now.end() || it->second != owners[i])
                return false;
        }
        return true;
    }

    /// Seconds until converged(@p live), or fails after @p bound.
    double converge(const std::vector<std::string>& live, std::chrono::milliseconds bound,
                    const char* what) {
        const auto start = steady::now();
        const bool ok = eventually([&] { return converged(live); }, bound);
        const double s = std::chrono::duration<double>(steady::now() - start).count();
        EXPECT_TRUE(ok) << what << ": not converged within " << bound.count() << " ms";
        std::cout << "[ figures  ] " << what << ": converged in " << s << " s\n";
        return s;
    }

    /// lease_events: per shard, a grant to another holder only after the
    /// previous grant was released, or as a takeover of an expired lease.
    void expect_grants_in_turn() {
        pqxx::nontransaction tx{admin()};
        const auto r = pqxx_compat::exec_params(
            tx,
            "SELECT e.name, e.event, coalesce(e.holder, ''), e.epoch FROM lease_events e "
            "WHERE starts_with(e.name, $1) ORDER BY e.id",
            group_prefix(m_group) + "shard/");
        std::map<std::string, std::pair<std::string, std::int64_t>> open; // name -> holder, epoch
        int grants = 0;
        for (const auto& row : r) {
            const auto name = row[0].as<std::string>();
            const auto event = row[1].as<std::string>();
            const auto holder = row[2].as<std::string>();
            const auto epoch = row[3].as<std::int64_t>();
            if (event == "acquired" || event == "takeover") {
                ++grants;
                const auto it = open.find(name);
                if (it != open.end()) {
                    EXPECT_EQ(event, "takeover")
                        << name << ": granted to " << holder << " while " << it->second.first
                        << " held epoch " << it->second.second << " unreleased";
                    EXPECT_GT(epoch, it->second.second);
                }
                open[name] = {holder, epoch};
            } else if (event == "released") {
                open.erase(name);
            }
        }
        EXPECT_GE(grants, static_cast<int>(shard_count));
    }

    std::string m_group;
    std::vector<std::string> m_shards;
    history m_history;
};

TEST_F(pg_group, join_leave_session_loss_and_death_converge_and_never_overlap) {
    auto a = std::make_unique<group_member>(config("a"));
    auto b = std::make_unique<group_member>(config("b"));
    auto c = std::make_unique<group_member>(config("c"));
    a->start();
    b->start();
    c->start();
    converge({"a", "b", "c"}, 4 * ttl, "start of 3 members");
    const auto before = holders();

    // A join: the newcomer gets its share; few others move.
    auto d = std::make_unique<group_member>(config("d"));
    d->start();
    converge({"a", "b", "c", "d"}, 2 * ttl, "join (3 -> 4 members)");
    const auto after = holders();
    int moved = 0;
    for (const auto& [shard, holder] : after)
        moved += before.at(shard) != holder ? 1 : 0;
    std::cout << "[ figures  ] join: " << moved << " of " << shard_count
              << " shards moved (minimum " << shard_count / 4 << ")\n";
    EXPECT_GE(moved, static_cast<int>(shard_count / 4));
    EXPECT_LE(moved, static_cast<int>(shard_count / 4 * 3 / 2));
    std::cout << "[ figures  ] the member API agrees: d owns " << d->owned_shards().size()
              << " shards\n";
    EXPECT_TRUE(eventually([&] { return d->owned_shards().size() == shard_count / 4; }, 2s));

    // A graceful leave: released at once, taken at once.
    b->stop();
    converge({"a", "c", "d"}, 2 * ttl, "leave (4 -> 3 members)");

    // Session loss: the member reconnects and keeps (or regains) its shards.
    ASSERT_GE(terminate("pglease-group-c"), 1);
    EXPECT_TRUE(eventually([&] { return converged({"a", "c", "d"}); }, 2 * ttl));

    // Death: a member in a child process is killed; its shards are owned
    // again within ttl + retry period (+ slack) of the kill.
    {
        child_process child{[&](const auto& say, int) {
            group_config cfg = config("e");
            cfg.callbacks = {};
            group_member e{cfg};
            e.start();
            say("started");
            for (;;)
                std::this_thread::sleep_for(1s);
            return 0;
        }};
        ASSERT_EQ(child.read_line(5s), "started");
        converge({"a", "c", "d", "e"}, 2 * ttl, "join of e (child process)");
        child.signal(SIGKILL);
        (void)child.wait();
        const double s = converge({"a", "c", "d"}, ttl + retry + 2s, "death of e (SIGKILL)");
        EXPECT_LE(s, std::chrono::duration<double>(ttl + retry + 1s).count());
    }

    a->stop();
    c->stop();
    d->stop();
    EXPECT_TRUE(holders().empty()) << "every shard released on stop";
    const auto overlaps = m_history.overlaps();
    EXPECT_TRUE(overlaps.empty()) << overlaps.size() << " overlaps, e.g. " << overlaps.front();
    expect_grants_in_turn();
}

} // namespace
} // namespace pglease::test
