/// @file test_lease_set_stop.cpp
/// @brief A lease set's terms ending, step by step on the test double's
/// store and manual clock: callback order, removal and stop releasing
/// only after on_lost returned, a release retried on a broken session,
/// and leases left to expire without release_on_stop.
#include "lease_set_hand.hpp"
#include "pglease/error.hpp"
#include "pglease/testing.hpp"
#include "sets/lease_set_state.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace pglease {
namespace {

using namespace std::chrono_literals;
using namespace test;
using testing::lease_store;
TEST(lease_set_state, callbacks_order_is_acquired_then_lost_and_a_new_term_only_after_on_lost) {
    lease_store store;
    hand_set a{store, "a", 1};
    auto events = a.state.step();
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0].what, lease_set_event::kind::acquired);
    const std::int64_t first = events[0].epoch;
    (void)store.mark_held_elsewhere("job/0", "b", 1s);
    store.advance(5s); // b's grant is over; a's renew finds the epoch gone
    events = a.state.step();
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0].what, lease_set_event::kind::lost);
    EXPECT_EQ(events[0].epoch, first);
    // on_lost has not returned: no new term however long we step.
    for (int i = 0; i < 5; ++i) {
        store.advance(3s);
        EXPECT_TRUE(a.state.step().empty());
    }
    a.state.callback_done("job/0", first);
    events = a.state.step();
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0].what, lease_set_event::kind::acquired);
    EXPECT_GT(events[0].epoch, first);
}

TEST(lease_set_state, remove_while_held_releases_after_on_lost_returned) {
    lease_store store;
    hand_set a{store, "a", 4};
    auto events = a.state.step();
    const stop_token token = events.front().stop;
    const std::string name = events.front().name;
    a.state.remove(name);
    events = a.state.step();
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0].why, lease_loss::removed);
    EXPECT_TRUE(token.stop_requested());
    EXPECT_FALSE(a.state.held(name));
    // Still ours on the server (and renewed) until on_lost returned.
    store.advance(6s);
    (void)a.state.step();
    EXPECT_EQ(store.row(name).holder, "a");
    EXPECT_GT(store.row(name).expires, store.clock().now() + 10s);
    a.state.callback_done(name, events[0].epoch);
    (void)a.state.step();
    EXPECT_EQ(a.db.release_many_calls.load(), 1);
    EXPECT_EQ(store.row(name).holder, "");
    EXPECT_EQ(a.state.grant(name), nullptr);
    EXPECT_EQ(a.state.held_count(), 3U);
    // Not wanted any more: not acquired again.
    (void)run_until(store, a, store.clock().now() + 10s);
    EXPECT_EQ(store.row(name).holder, "");
}

TEST(lease_set_state, stop_releases_everything_in_one_round_trip_once_every_on_lost_returned) {
    lease_store store;
    hand_set a{store, "a", 50};
    (void)a.state.step();
    ASSERT_EQ(a.state.held_count(), 50U);
    const auto stopping = a.state.stop();
    ASSERT_EQ(stopping.size(), 50U);
    for (const auto& e : stopping)
        EXPECT_EQ(e.why, lease_loss::stopped);
    EXPECT_EQ(a.state.held_count(), 0U);
    for (std::size_t i = 0; i + 1 < stopping.size(); ++i) {
        a.state.callback_done(stopping[i].name, stopping[i].epoch);
        (void)a.state.step();
    }
    EXPECT_EQ(a.db.release_many_calls.load(), 0);
    EXPECT_FALSE(a.state.stopped());
    EXPECT_EQ(store.row("job/0").holder, "a");
    a.state.callback_done(stopping.back().name, stopping.back().epoch);
    (void)a.state.step();
    EXPECT_EQ(a.db.release_many_calls.load(), 1);
    EXPECT_TRUE(a.state.stopped());
    for (const auto& n : names(50))
        EXPECT_EQ(store.row(n).holder, "") << n;
}

TEST(lease_set_state, a_release_on_a_broken_session_is_made_again_three_calls_in_all) {
    // Two broken calls: the third reconnects and frees them. Three: the
    // leases are left to expire.
    for (const int broken : {2, 3}) {
        lease_store store;
        hand_set a{store, "a", 5};
        (void)a.state.step();
        ASSERT_EQ(a.state.held_count(), 5U);
        for (const auto& e : a.state.stop())
            a.state.callback_done(e.name, e.epoch);
        a.db.fail_next = broken;
        (void)a.state.step();
        EXPECT_TRUE(a.state.stopped()) << broken;
        EXPECT_EQ(a.db.fail_next.load(), 0) << broken;
        EXPECT_EQ(a.state.release_rounds(), broken < 3 ? 1U : 0U) << broken;
        for (const auto& n : names(5))
            EXPECT_EQ(store.row(n).holder, broken < 3 ? "" : "a") << n << " " << broken;
    }
}

TEST(lease_set_state, stop_without_release_on_stop_leaves_the_leases_to_expire) {
    lease_store store;
    auto cfg = config("a", 5);
    cfg.release_on_stop = false;
    hand_set a{store, cfg};
    (void)a.state.step();
    for (const auto& e : a.state.stop())
        a.state.callback_done(e.name, e.epoch);
    (void)a.state.step();
    EXPECT_TRUE(a.state.stopped());
    EXPECT_EQ(a.db.release_many_calls.load(), 0);
    EXPECT_EQ(store.row("job/1").holder, "a");
}

} // namespace
} // namespace pglease
