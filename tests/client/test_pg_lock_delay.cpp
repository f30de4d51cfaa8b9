/// @file test_pg_lock_delay.cpp
/// @brief lock_delay from the client's configs against the real server: the
/// four-argument lease_acquire is sent (one lease and many), the delay keeps
/// other holders out after a grant lost without release, and an elector's
/// successor is granted no earlier than the lost grant's expiry + delay
/// (times read on the server's clock).
#include "pg_fixture.hpp"
#include "pglease/elector.hpp"
#include "pglease/lease.hpp"
#include "pglease/lease_set.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <atomic>
#include <thread>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
constexpr auto no_deadline = clock::time_point::max();

class pg_lock_delay : public pg_test {
protected:
    /// The lock_delay recorded in @p name's row, in milliseconds.
    long recorded_delay(const std::string& name) {
        pqxx::work tx{admin()};
        return pqxx_compat::exec_params1(tx,
                                         "SELECT (extract(epoch FROM lock_delay) * 1000)::bigint "
                                         "FROM leases WHERE name = $1",
                                         name)[0]
            .as<long>();
    }

    /// Waits (server clock) until @p name's grant has expired.
    void wait_expired(const std::string& name) {
        ASSERT_TRUE(eventually([&] { return !lease_status(name).valid; }, 10s));
    }

    /// Microseconds from the expiry of @p name's current row to @p event's
    /// time (the latest such event of the lease), on the server's clock.
    long micros_after(const std::string& name, const std::string& event,
                      const std::string& expired_at) {
        pqxx::work tx{admin()};
        return pqxx_compat::exec_params1(
                   tx,
                   "SELECT (extract(epoch FROM max(time) - $3::timestamptz) * 1e6)::bigint "
                   "FROM lease_events WHERE name = $1 AND event = $2",
                   name, event, expired_at)[0]
            .as<long>();
    }

    std::string expires_at(const std::string& name) {
        pqxx::work tx{admin()};
        return pqxx_compat::exec_params1(tx, "SELECT expires_at::text FROM leases WHERE name = $1",
                                         name)[0]
            .as<std::string>();
    }
};

TEST_F(pg_lock_delay, a_lost_grant_keeps_other_holders_out_for_its_delay) {
    const auto name = unique_name("lock_delay_one");
    pq_backend db{env_options()};
    const auto first = db.acquire(name, "a", 500ms, 3s, no_deadline);
    ASSERT_TRUE(first.acquired);
    EXPECT_EQ(recorded_delay(name), 3000);
    wait_expired(name);

    // Another holder: refused while the delay runs, told until when.
    const auto refused = db.acquire(name, "b", 5s, no_deadline);
    EXPECT_FALSE(refused.acquired);
    EXPECT_EQ(refused.holder, "a");
    ASSERT_TRUE(refused.remaining);
    EXPECT_GT(*refused.remaining, 0us);
    EXPECT_LE(*refused.remaining, 3s);

    // The lost grant's own holder is not kept out: a new term at once.
    const auto again = db.acquire(name, "a", 5s, no_deadline);
    ASSERT_TRUE(again.acquired);
    EXPECT_GT(again.epoch, first.epoch);
    EXPECT_EQ(recorded_delay(name), 0) << "a grant without a delay records none";

    // A release skips the delay: the next holder is granted at once.
    ASSERT_TRUE(db.acquire(name, "a", 5s, 3s, no_deadline).acquired); // extends, same epoch
    ASSERT_TRUE(db.release(name, "a", again.epoch));
    EXPECT_TRUE(db.acquire(name, "b", 5s, no_deadline).acquired);
}

TEST_F(pg_lock_delay, the_other_holder_is_granted_once_the_delay_has_passed) {
    const auto name = unique_name("lock_delay_ends");
    pq_backend db{env_options()};
    lease_options o;
    o.identity = "a";
    o.ttl = 500ms;
    o.lock_delay = 1500ms;
    lease a{db, name, o};
    ASSERT_TRUE(a.acquire());
    wait_expired(name);
    const std::string lost_at = expires_at(name);

    lease_options ob;
    ob.identity = "b";
    ob.ttl = 5s;
    lease b{db, name, ob};
    ASSERT_TRUE(b.acquire_for(10s));
    EXPECT_GE(micros_after(name, "takeover", lost_at), 1'500'000)
        << "granted before the lost grant's lock delay had passed";
}

TEST_F(pg_lock_delay, a_lease_set_records_its_delay_on_every_grant) {
    const auto prefix = unique_name("lock_delay_set");
    std::vector<std::string> names;
    for (int i = 0; i < 3; ++i)
        names.push_back(prefix + "_" + std::to_string(i));
    pq_backend db{env_options()};
    const auto granted = db.acquire_many(names, "a", 500ms, 2s, no_deadline);
    ASSERT_EQ(granted.size(), names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        EXPECT_TRUE(granted[i].acquired) << names[i];
        EXPECT_EQ(recorded_delay(names[i]), 2000) << names[i];
    }
    for (const auto& n : names)
        wait_expired(n);
    for (const auto& reply : db.acquire_many(names, "b", 5s, no_deadline))
        EXPECT_FALSE(reply.acquired) << "granted while the lock delay ran";

    // And from the set's config: acquire_many carries lease_set_config's delay.
    lease_set_config cfg;
    cfg.identity = "c";
    cfg.ttl = 3s;
    cfg.renew_deadline = 2s;
    cfg.retry_period = 200ms;
    cfg.lock_delay = 4s;
    cfg.connection = env_options("pglease-lock-delay-set");
    const auto fresh = unique_name("lock_delay_cfg");
    cfg.names = {fresh + "_0", fresh + "_1"};
    {
        lease_set set{cfg};
        set.start();
        ASSERT_TRUE(eventually([&] { return set.held_count() == 2; }, 10s));
        EXPECT_EQ(recorded_delay(fresh + "_0"), 4000);
        EXPECT_EQ(recorded_delay(fresh + "_1"), 4000);
        set.stop();
    }
}

TEST_F(pg_lock_delay, an_electors_successor_waits_out_the_lost_leaders_delay) {
    const auto name = unique_name("lock_delay_elector");
    std::atomic<int> a_started{0};
    std::atomic<int> b_started{0};
    const auto config = [&](const std::string& id, std::atomic<int>& started) {
        elector_config c;
        c.lease_name = name;
        c.identity = id;
        c.ttl = 1500ms;
        c.renew_deadline = 1000ms;
        c.retry_period = 200ms;
        c.release_on_stop = false; // the grant is lost by expiry, not released
        c.connection = env_options("pglease-lock-delay-" + id);
        c.callbacks.on_started_leading = [&started](std::int64_t, const stop_token&) { ++started; };
        c.callbacks.on_stopped_leading = [] {};
        return c;
    };
    auto ca = config("a", a_started);
    ca.lock_delay = 2s;
    {
        elector a{ca};
        a.start();
        ASSERT_TRUE(eventually([&] { return a_started.load() == 1; }, 10s));
        EXPECT_EQ(recorded_delay(name), 2000);
        a.stop();
    }
    wait_expired(name);
    const std::string lost_at = expires_at(name);
    elector b{config("b", b_started)};
    b.start();
    ASSERT_TRUE(eventually([&] { return b_started.load() == 1; }, 15s));
    EXPECT_GE(micros_after(name, "takeover", lost_at), 2'000'000)
        << "the successor was granted before the lost leader's lock delay had passed";
    b.stop();
}

} // namespace
} // namespace pglease::test
