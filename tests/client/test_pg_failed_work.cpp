/// @file test_pg_failed_work.cpp
/// @brief Against the real server, the rule every holder follows when the
/// callback that starts a term's work throws (the elector's is in
/// test_pg_elector.cpp): the term ends with reason "failed", the lease is
/// released (lease_events shows a release, not an expiry), and a retry
/// period later the holder takes it again with a new epoch.
#include "pg_fixture.hpp"
#include "pglease/group.hpp"
#include "pglease/lease_set.hpp"

#include "pglease/internal/group_names.hpp"
#include "pglease/internal/pqxx_compat.hpp"

#include <atomic>
#include <mutex>
#include <vector>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;

/// What the callbacks saw, in order.
class journal {
public:
    void add(std::string line) {
        const std::lock_guard lock{m_mutex};
        m_lines.push_back(std::move(line));
    }
    [[nodiscard]] std::vector<std::string> lines() const {
        const std::lock_guard lock{m_mutex};
        return m_lines;
    }
    [[nodiscard]] std::size_t size() const { return lines().size(); }

private:
    mutable std::mutex m_mutex;
    std::vector<std::string> m_lines;
};

class pg_failed_work : public pg_test {
protected:
    /// The epochs of @p lease's events of @p kind, in order.
    std::vector<std::int64_t> events(const std::string& lease, const std::string& kind) {
        pqxx::nontransaction tx{admin()};
        std::vector<std::int64_t> out;
        for (const auto& row :
             pqxx_compat::exec_params(tx,
                                      "SELECT epoch FROM lease_events WHERE name = $1 "
                                      "AND event = $2 ORDER BY id",
                                      lease, kind))
            out.push_back(row[0].as<std::int64_t>());
        return out;
    }
};

TEST_F(pg_failed_work, a_lease_set_releases_a_lease_whose_on_acquired_threw_then_takes_it_again) {
    const std::string name = unique_name("fw") + "/it's";
    journal seen;
    std::atomic<int> starts{0};
    lease_set_config c;
    c.names = {name};
    c.identity = "set-a";
    c.ttl = 3000ms;
    c.renew_deadline = 2000ms;
    c.retry_period = 400ms;
    c.connection = env_options("pglease-failed-work");
    c.callbacks.on_acquired = [&](const std::string&, std::int64_t epoch, stop_token) {
        seen.add("acquired " + std::to_string(epoch));
        if (starts.fetch_add(1) == 0)
            throw std::runtime_error{"the work could not start"};
    };
    c.callbacks.on_lost = [&](const std::string&, std::int64_t epoch, lease_loss why) {
        seen.add("lost " + std::to_string(epoch) + " " + to_string(why));
    };
    lease_set set{c};
    set.start();
    ASSERT_TRUE(eventually([&] { return seen.size() >= 3; }, 10s));
    set.stop();

    const auto lines = seen.lines();
    const auto releases = events(name, "released");
    const auto acquires = events(name, "acquired");
    ASSERT_GE(acquires.size(), 2U);
    const std::int64_t first = acquires[0];
    const std::int64_t second = acquires[1];
    EXPECT_EQ(lines[0], "acquired " + std::to_string(first));
    EXPECT_EQ(lines[1], "lost " + std::to_string(first) + " failed");
    EXPECT_EQ(lines[2], "acquired " + std::to_string(second));
    EXPECT_GT(second, first);
    ASSERT_FALSE(releases.empty());
    EXPECT_EQ(releases.front(), first) << "the failed term was released, not left to expire";
}

TEST_F(pg_failed_work, a_group_member_releases_a_shard_whose_work_threw_then_takes_it_again) {
    const std::string group = unique_name("fwg") + "/q'g";
    const std::string lease = group_shard_lease(group, "only");
    journal seen;
    std::atomic<int> starts{0};
    group_config c;
    c.group = group;
    c.shards = {"only"};
    c.identity = "member-a";
    c.ttl = 3000ms;
    c.renew_deadline = 2000ms;
    c.retry_period = 400ms;
    c.connection = env_options("pglease-failed-work");
    c.callbacks.on_shard_started = [&](const std::string&, std::int64_t epoch, stop_token stop) {
        seen.add("started " + std::to_string(epoch));
        if (starts.fetch_add(1) == 0)
            throw std::runtime_error{"the work could not start"};
        stop.wait();
    };
    c.callbacks.on_shard_stopped = [&](const std::string&, std::int64_t epoch,
                                       shard_stop_reason why) {
        seen.add("stopped " + std::to_string(epoch) + " " + to_string(why));
    };
    group_member member{c};
    member.start();
    ASSERT_TRUE(eventually([&] { return seen.size() >= 3; }, 10s));
    member.stop();

    const auto lines = seen.lines();
    const auto acquires = events(lease, "acquired");
    const auto releases = events(lease, "released");
    ASSERT_GE(acquires.size(), 2U);
    EXPECT_EQ(lines[0], "started " + std::to_string(acquires[0]));
    EXPECT_EQ(lines[1], "stopped " + std::to_string(acquires[0]) + " failed");
    EXPECT_EQ(lines[2], "started " + std::to_string(acquires[1]));
    EXPECT_GT(acquires[1], acquires[0]);
    ASSERT_FALSE(releases.empty());
    EXPECT_EQ(releases.front(), acquires[0]) << "the failed shard was released, not left to expire";
}

} // namespace
} // namespace pglease::test
