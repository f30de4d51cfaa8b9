/// @file test_group_state.cpp
/// @brief A lease group's state machine step by step on the test double's
/// store and manual clock: joins, graceful moves (release before acquire),
/// one renew round trip per cycle, step-down at the deadlines; and the
/// threaded group_member's callbacks.
#include "flaky_backend.hpp"
#include "groups/group_state.hpp"
#include "pglease/error.hpp"
#include "pglease/group.hpp"
#include "pglease/testing.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>

namespace pglease {
namespace {

using namespace std::chrono_literals;
using testing::lease_store;

using test::flaky_backend;

group_config config(const std::string& identity, std::size_t shards = 8) {
    group_config c;
    c.group = "orders";
    c.shards = numbered_shards("orders", shards);
    c.identity = identity;
    c.ttl = 15s;
    c.renew_deadline = 10s;
    c.retry_period = 2s;
    return c;
}

/// One member driven by hand: its session and state.
struct hand_member {
    hand_member(lease_store& store, const std::string& identity, std::size_t shards = 8)
        : db{store.connect()}
        , state{*db, config(identity, shards), store.clock(), 1} {}
    std::unique_ptr<backend> db;
    group_state state;

    /// Steps, and reports every shard_stopping as finished at once.
    std::vector<group_event> step_and_finish() {
        auto events = state.step();
        for (const auto& e : events)
            if (e.what == group_event::kind::shard_stopping)
                state.work_stopped(e.shard);
        return events;
    }
};

std::set<std::string> of_kind(const std::vector<group_event>& events, group_event::kind k) {
    std::set<std::string> out;
    for (const auto& e : events)
        if (e.what == k)
            out.insert(e.shard);
    return out;
}

TEST(group_state, a_lone_member_joins_and_takes_every_shard) {
    lease_store store;
    hand_member a{store, "a"};
    const auto events = a.state.step();
    EXPECT_TRUE(a.state.joined());
    EXPECT_EQ(of_kind(events, group_event::kind::shard_started).size(), 8U);
    EXPECT_EQ(a.state.owned().size(), 8U);
    EXPECT_EQ(store.row("pglease:group/orders/shard/orders/3").holder, "a");
    EXPECT_EQ(store.row("pglease:group/orders/member/1/a").holder, "a");
    ASSERT_EQ(a.state.members().size(), 1U);
    EXPECT_EQ(a.state.members().front().identity, "a");
}

TEST(group_state, one_renew_round_trip_per_cycle_keeps_everything) {
    lease_store store;
    hand_member a{store, "a"};
    (void)a.state.step();
    const auto rounds = a.state.renew_rounds();
    // Ten renew intervals (5 s each), stepping whenever due.
    const auto end = store.clock().now() + 50s;
    while (store.clock().now() < end) {
        store.advance(std::max(a.state.next_step() - store.clock().now(), clock::duration{1ms}));
        (void)a.state.step();
    }
    EXPECT_EQ(a.state.owned().size(), 8U);
    EXPECT_TRUE(a.state.joined());
    const auto cycles = a.state.renew_rounds() - rounds;
    EXPECT_GE(cycles, 9U);
    EXPECT_LE(cycles, 11U);
}

TEST(group_state, a_join_moves_shards_release_before_acquire) {
    lease_store store;
    hand_member a{store, "a"};
    (void)a.step_and_finish();
    ASSERT_EQ(a.state.owned().size(), 8U);

    hand_member b{store, "b"};
    auto events = b.state.step(); // joins; every shard is still a's
    EXPECT_TRUE(b.state.joined());
    EXPECT_TRUE(of_kind(events, group_event::kind::shard_started).empty());

    // a sees b and stops the shards that are b's now, but releases none of
    // them before their work stopped.
    a.state.request_scan();
    events = a.state.step();
    const auto moving = of_kind(events, group_event::kind::shard_stopping);
    EXPECT_EQ(moving.size(), 4U);
    for (const auto& s : moving) {
        EXPECT_EQ(a.state.assigned_to(s), "b");
        EXPECT_TRUE(a.state.holds(s)) << "still held while its work stops";
    }
    b.state.request_scan();
    EXPECT_TRUE(of_kind(b.state.step(), group_event::kind::shard_started).empty())
        << "b must not get a shard before a released it";

    // a's work stops: released; b takes them.
    for (const auto& s : moving)
        a.state.work_stopped(s);
    (void)a.state.step();
    for (const auto& s : moving)
        EXPECT_FALSE(a.state.holds(s));
    b.state.request_scan();
    EXPECT_EQ(of_kind(b.state.step(), group_event::kind::shard_started), moving);
    EXPECT_EQ(a.state.owned().size() + b.state.owned().size(), 8U);
}

TEST(group_state, a_leave_hands_every_shard_over) {
    lease_store store;
    hand_member a{store, "a"};
    hand_member b{store, "b"};
    for (int i = 0; i < 3; ++i) {
        (void)a.step_and_finish();
        b.state.request_scan();
        (void)b.step_and_finish();
        a.state.request_scan();
    }
    ASSERT_EQ(a.state.owned().size(), 4U);
    ASSERT_EQ(b.state.owned().size(), 4U);

    auto events = a.state.leave();
    EXPECT_EQ(of_kind(events, group_event::kind::shard_stopping).size(), 4U);
    EXPECT_EQ(store.row("pglease:group/orders/member/1/a").holder, "") << "membership first";
    for (const auto& e : events)
        a.state.work_stopped(e.shard);
    (void)a.state.step();
    EXPECT_TRUE(a.state.left());
    b.state.request_scan();
    (void)b.step_and_finish();
    EXPECT_EQ(b.state.owned().size(), 8U);
}

TEST(group_state, a_dead_member_s_shards_are_taken_after_their_expiry) {
    lease_store store;
    hand_member a{store, "a"};
    hand_member b{store, "b"};
    for (int i = 0; i < 3; ++i) {
        (void)a.step_and_finish();
        b.state.request_scan();
        (void)b.step_and_finish();
        a.state.request_scan();
    }
    ASSERT_EQ(b.state.owned().size(), 4U);
    // b dies (never steps again). a wakes at the expiry b's leases had.
    const auto start = store.clock().now();
    while (a.state.owned().size() < 8U && store.clock().now() < start + 40s) {
        store.advance(std::max(a.state.next_step() - store.clock().now(), clock::duration{1ms}));
        (void)a.step_and_finish();
    }
    EXPECT_EQ(a.state.owned().size(), 8U);
    EXPECT_LE(store.clock().now() - start, 15s + 10ms) << "within ttl of b's last renew";
}

TEST(group_state, steps_down_at_the_local_deadline_without_io) {
    lease_store store;
    hand_member a{store, "a"};
    (void)a.state.step();
    ASSERT_TRUE(a.state.holds("orders/0"));
    store.advance(14s + 1ms); // ttl - safety margin (1 s), not stepping
    EXPECT_FALSE(a.state.holds("orders/0"));
    EXPECT_TRUE(a.state.owned().empty());
    const auto events = a.state.step();
    for (const auto& e : events) {
        if (e.what == group_event::kind::shard_stopping) {
            EXPECT_EQ(e.reason, shard_stop_reason::lost);
        }
    }
    EXPECT_EQ(of_kind(events, group_event::kind::shard_stopping).size(), 8U);
}

TEST(group_state, failing_renewals_step_down_at_the_renew_deadline) {
    lease_store store;
    auto flaky = std::make_unique<flaky_backend>(store.connect());
    flaky_backend& db = *flaky;
    group_state a{db, config("a"), store.clock(), 1};
    (void)a.step();
    ASSERT_EQ(a.owned().size(), 8U);
    db.fail = true;
    std::vector<group_event> events;
    const auto start = store.clock().now();
    while (events.empty() && store.clock().now() < start + 20s) {
        store.advance(std::max(a.next_step() - store.clock().now(), clock::duration{1ms}));
        events = a.step();
    }
    ASSERT_EQ(of_kind(events, group_event::kind::shard_stopping).size(), 8U);
    EXPECT_EQ(events.front().reason, shard_stop_reason::renew_deadline);
    EXPECT_LE(store.clock().now() - start, 10s + 1ms);
    EXPECT_FALSE(a.joined());
}

TEST(group_state, a_shard_taken_elsewhere_is_lost_at_the_next_renew) {
    lease_store store;
    hand_member a{store, "a"};
    (void)a.state.step();
    store.mark_held_elsewhere("pglease:group/orders/shard/orders/2", "intruder");
    std::vector<group_event> events;
    const auto start = store.clock().now();
    while (events.empty() && store.clock().now() < start + 6s) {
        store.advance(std::max(a.state.next_step() - store.clock().now(), clock::duration{1ms}));
        events = a.state.step();
    }
    EXPECT_LE(store.clock().now() - start, 5s) << "at the next renew (ttl / 3)";
    EXPECT_EQ(of_kind(events, group_event::kind::shard_stopping),
              std::set<std::string>{"orders/2"});
    EXPECT_FALSE(a.state.holds("orders/2"));
}

TEST(group_member, callbacks_start_and_stop_every_shard) {
    lease_store store;
    std::mutex mutex;
    std::set<std::string> running;
    std::vector<std::string> order; ///< "start X", "stop X"
    std::atomic<int> stopped{0};
    auto cfg = config("a", 4);
    cfg.callbacks.on_shard_started = [&](const std::string& shard, std::int64_t epoch,
                                         stop_token stop) {
        EXPECT_GT(epoch, 0);
        {
            const std::lock_guard lock{mutex};
            running.insert(shard);
            order.push_back("start " + shard);
        }
        stop.wait();
        const std::lock_guard lock{mutex};
        running.erase(shard);
    };
    cfg.callbacks.on_shard_stopped = [&](const std::string& shard, std::int64_t,
                                         shard_stop_reason why) {
        EXPECT_EQ(why, shard_stop_reason::leaving);
        const std::lock_guard lock{mutex};
        EXPECT_EQ(running.count(shard), 0U) << "work returned before on_shard_stopped";
        order.push_back("stop " + shard);
        ++stopped;
    };
    {
        group_member m{cfg, store.connect(), store.clock()};
        m.start();
        ASSERT_TRUE(store.wait_until_waiting(1));
        EXPECT_EQ(m.owned_shards().size(), 4U);
        EXPECT_NO_THROW((void)m.token("orders/1"));
        EXPECT_THROW((void)m.token("orders/9"), lease_lost);
        // the work starts on the callback thread: wait for it generously (a
        // loaded machine), then assert once
        for (int i = 0; i < 2000; ++i) {
            const std::lock_guard lock{mutex};
            if (running.size() == 4U)
                break;
            std::this_thread::sleep_for(5ms);
        }
        EXPECT_EQ(running.size(), 4U);
        m.stop();
    }
    EXPECT_EQ(stopped.load(), 4);
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(store.row("pglease:group/orders/shard/orders/" + std::to_string(i)).holder, "")
            << "released on stop";
}

TEST(group_member, a_shard_s_stop_token_follows_renewals) {
    // Real time (a member's stop tokens run on the system clock, whatever
    // the member's own clock): ttl 1 s, renewed about every 330 ms.
    lease_store store{system_clock()};
    std::mutex mutex;
    std::map<std::string, std::pair<std::int64_t, stop_token>> tokens; ///< of the latest term
    auto cfg = config("a", 2);
    cfg.ttl = 1000ms;
    cfg.renew_deadline = 700ms;
    cfg.retry_period = 200ms;
    cfg.callbacks.on_shard_started = [&](const std::string& shard, std::int64_t epoch,
                                         stop_token stop) {
        {
            const std::lock_guard lock{mutex};
            tokens[shard] = {epoch, stop};
        }
        stop.wait();
    };
    group_member m{cfg, store.connect(), system_clock()};
    m.start();
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i) {
        {
            const std::lock_guard lock{mutex};
            if (tokens.size() == 2U)
                break;
        }
        std::this_thread::sleep_for(5ms);
    }
    // Three ttls: a token that fired must be of a shard the member no
    // longer holds under that epoch (a loss on a loaded machine is fine).
    std::string fired_while_held;
    while (std::chrono::steady_clock::now() < started + 3s && fired_while_held.empty()) {
        {
            const std::lock_guard lock{mutex};
            for (const auto& [shard, term] : tokens) {
                if (!term.second.stop_requested())
                    continue;
                try {
                    if (m.token(shard).epoch == term.first)
                        fired_while_held = shard;
                } catch (const lease_lost&) {
                    // not held: the token was right to fire
                }
            }
        }
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(fired_while_held, "") << "its stop token fired while the member held it";
    EXPECT_EQ(m.owned_shards().size(), 2U);
    m.stop();
}

TEST(group_member, a_shard_s_stop_token_fires_at_its_local_deadline) {
    lease_store store;
    std::atomic<int> woke{0};
    auto cfg = config("a", 2);
    cfg.callbacks.on_shard_started = [&](const std::string&, std::int64_t, stop_token stop) {
        stop.wait();
        ++woke;
    };
    auto flaky = std::make_unique<flaky_backend>(store.connect());
    flaky_backend& db = *flaky;
    group_member m{cfg, std::move(flaky), store.clock()};
    m.start();
    ASSERT_TRUE(store.wait_until_waiting(1));
    ASSERT_EQ(m.owned_shards().size(), 2U);
    db.fail = true; // renewals fail from now on
    store.advance(10s + 1ms);
    for (int i = 0; i < 400 && woke.load() < 2; ++i)
        std::this_thread::sleep_for(5ms);
    EXPECT_EQ(woke.load(), 2);
    EXPECT_TRUE(m.owned_shards().empty());
    m.stop();
}

} // namespace
} // namespace pglease
