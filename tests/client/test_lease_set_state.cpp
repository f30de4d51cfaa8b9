/// @file test_lease_set_state.cpp
/// @brief A lease set's state machine step by step on the test double's
/// store and manual clock: one round trip per kind per cycle, the deadline
/// rules of a single lease, partial loss, and two sets competing for the
/// same names (terms ending: test_lease_set_stop.cpp).
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

TEST(lease_set_state, acquires_all_in_one_round_trip_and_renews_all_in_one_per_cycle) {
    lease_store store;
    hand_set a{store, "a", 200};
    const auto events = a.step_and_finish();
    EXPECT_EQ(of_kind(events, lease_set_event::kind::acquired).size(), 200U);
    EXPECT_EQ(a.db.acquire_many_calls.load(), 1);
    EXPECT_EQ(a.state.held_count(), 200U);
    EXPECT_EQ(store.row("job/17").holder, "a");
    EXPECT_EQ(a.state.epoch("job/17"), store.row("job/17").epoch);

    // Twelve renew intervals (5 s each): one renew_many each, nothing else.
    const auto start = store.clock().now();
    const auto later = run_until(store, a, start + 60s);
    EXPECT_TRUE(later.empty());
    EXPECT_EQ(a.state.held_count(), 200U);
    EXPECT_EQ(a.db.renew_many_calls.load(), 12);
    EXPECT_EQ(a.state.renew_rounds(), 12U);
    EXPECT_EQ(a.db.acquire_many_calls.load(), 1);
    // Every row renewed by the last round (ttl 15 s from a renewal <= 5 s ago).
    for (const auto& n : names(200))
        EXPECT_GT(store.row(n).expires, store.clock().now() + 9s) << n;
}

TEST(lease_set_state, renewals_failing_step_down_at_the_renew_deadline_before_expiry) {
    lease_store store;
    hand_set a{store, "a", 20};
    const auto events = a.state.step();
    ASSERT_EQ(a.state.held_count(), 20U);
    const auto acquired_at = store.clock().now();
    stop_token token;
    for (const auto& e : events)
        if (e.name == "job/3")
            token = e.stop;
    a.db.fail = true; // the connection is gone: no renewal succeeds

    std::vector<lease_set_event> lost;
    clock::time_point lost_at{};
    while (lost.empty() && store.clock().now() < acquired_at + 20s) {
        store.advance(std::max(a.state.next_step() - store.clock().now(), clock::duration{1ms}));
        lost = a.state.step();
        lost_at = store.clock().now();
        ASSERT_TRUE(lost.empty() || a.state.held_count() == 0U);
    }
    ASSERT_EQ(lost.size(), 20U);
    for (const auto& e : lost)
        EXPECT_EQ(e.why, lease_loss::renew_deadline);
    // At the renew deadline (10 s), before the local deadline (14 s) and
    // long before the store's expiry (15 s), which the store still shows.
    EXPECT_EQ(lost_at, acquired_at + 10s);
    EXPECT_TRUE(token.stop_requested());
    EXPECT_FALSE(a.state.held("job/3"));
    EXPECT_EQ(a.state.epoch("job/3"), 0);
    EXPECT_EQ(store.row("job/3").holder, "a");
    EXPECT_GT(store.row("job/3").expires, lost_at);
}

TEST(lease_set_state, the_stop_token_stops_at_the_local_deadline_without_any_step) {
    lease_store store;
    hand_set a{store, "a", 3};
    const auto events = a.state.step();
    ASSERT_EQ(events.size(), 3U);
    const auto start = store.clock().now();
    const stop_token token = events.front().stop;
    store.advance(14s - 1ms); // local deadline: sent + ttl - margin (14 s)
    EXPECT_FALSE(token.stop_requested());
    EXPECT_TRUE(a.state.held(events.front().name));
    store.advance(1ms);
    EXPECT_TRUE(token.stop_requested());
    EXPECT_FALSE(a.state.held(events.front().name));
    EXPECT_EQ(a.state.held_count(), 0U);
    EXPECT_LT(store.clock().now(), start + 15s); // before the store's expiry
}

TEST(lease_set_state, the_stop_token_follows_renewals_and_fires_only_once_the_lease_is_lost) {
    lease_store store;
    hand_set a{store, "a", 3};
    const auto events = a.state.step();
    ASSERT_EQ(events.size(), 3U);
    const std::string name = events.front().name;
    const stop_token token = events.front().stop;
    // A minute of renewals (every 5 s): the first local deadline (14 s) is
    // long gone, but the lease is renewed, so its work must not be told to stop.
    const auto start = store.clock().now();
    while (store.clock().now() < start + 60s) {
        store.advance(std::max(a.state.next_step() - store.clock().now(), clock::duration{1ms}));
        EXPECT_TRUE(a.step_and_finish().empty());
        ASSERT_TRUE(a.state.held(name));
        ASSERT_FALSE(token.stop_requested())
            << "stop token fired while the lease was held, "
            << std::chrono::duration_cast<std::chrono::seconds>(store.clock().now() - start).count()
            << " s after the acquire";
    }
    EXPECT_GE(a.state.renew_rounds(), 11U);
    // Renewals fail from now on: the token fires when the lease is lost
    // (the renew deadline), not before.
    a.db.fail = true;
    const auto deadline = a.state.grant(name)->deadline();
    while (a.state.held(name) && store.clock().now() < deadline + 1s) {
        EXPECT_FALSE(token.stop_requested());
        store.advance(std::max(a.state.next_step() - store.clock().now(), clock::duration{1ms}));
        (void)a.step_and_finish();
    }
    EXPECT_FALSE(a.state.held(name));
    EXPECT_TRUE(token.stop_requested());
}

TEST(lease_set_state, a_failed_renew_keeps_the_deadline_and_a_later_one_extends_it) {
    lease_store store;
    hand_set a{store, "a", 5};
    (void)a.state.step();
    const auto start = store.clock().now();
    a.db.fail = true;
    store.advance(5s); // first renew: fails
    EXPECT_TRUE(a.state.step().empty());
    EXPECT_EQ(a.state.renew_rounds(), 0U);
    a.db.fail = false;
    store.advance(std::max(a.state.next_step() - store.clock().now(), clock::duration{1ms}));
    EXPECT_TRUE(a.state.step().empty());
    EXPECT_EQ(a.state.renew_rounds(), 1U);
    EXPECT_EQ(a.state.last_renew_latency(), clock::duration::zero()); // no time passes in the store
    const auto renewed = store.clock().now();
    EXPECT_LT(renewed, start + 10s); // retried within the renew deadline
    // The deadline now counts from the retry that succeeded.
    const auto l = a.state.grant("job/0");
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->deadline(), renewed + 14s);
    EXPECT_EQ(a.state.held_count(), 5U);
}

TEST(lease_set_state, partial_loss_ends_only_the_refused_terms_in_the_same_round) {
    lease_store store;
    hand_set a{store, "a", 10};
    (void)a.state.step();
    const std::int64_t old_epoch = a.state.epoch("job/4");
    for (const char* n : {"job/2", "job/4", "job/7"})
        (void)store.mark_held_elsewhere(n, "b", 60s);
    store.advance(std::max(a.state.next_step() - store.clock().now(), clock::duration{1ms}));
    const auto events = a.state.step();
    EXPECT_EQ(a.db.renew_many_calls.load(), 1);
    EXPECT_EQ(of_kind(events, lease_set_event::kind::lost),
              (std::set<std::string>{"job/2", "job/4", "job/7"}));
    for (const auto& e : events) {
        EXPECT_EQ(e.why, lease_loss::lost);
        if (e.name == "job/4") {
            EXPECT_EQ(e.epoch, old_epoch);
        }
    }
    EXPECT_EQ(a.state.held_count(), 7U);
    EXPECT_FALSE(a.state.held("job/4"));
    EXPECT_TRUE(a.state.held("job/5"));
    // Lost, not removed: never released (it is b's), and tried again
    // without success while b holds it.
    for (const auto& e : events)
        a.state.callback_done(e.name, e.epoch);
    (void)run_until(store, a, store.clock().now() + 20s);
    EXPECT_EQ(a.db.release_many_calls.load(), 0);
    EXPECT_EQ(store.row("job/4").holder, "b");
    EXPECT_FALSE(a.state.held("job/4"));
    EXPECT_GE(a.db.acquire_many_calls.load(), 2);
    // b's grant ends: a takes it again, with a new term and epoch.
    (void)store.revoke("job/4");
    const auto again = run_until(store, a, store.clock().now() + 3s);
    EXPECT_EQ(of_kind(again, lease_set_event::kind::acquired), (std::set<std::string>{"job/4"}));
    EXPECT_TRUE(a.state.held("job/4"));
    EXPECT_GT(a.state.epoch("job/4"), old_epoch);
}

TEST(lease_set_state, a_wanted_lease_held_elsewhere_is_tried_again_at_its_reported_expiry) {
    lease_store store;
    (void)store.mark_held_elsewhere("job/0", "b", 1s);
    hand_set a{store, "a", 1};
    EXPECT_TRUE(a.state.step().empty());
    const auto start = store.clock().now();
    // Its expiry (+1 ms) comes before the retry period (2 s x [1, 1.2]).
    EXPECT_EQ(a.state.next_step(), start + 1s + 1ms);
    store.advance(1s + 1ms);
    EXPECT_EQ(of_kind(a.state.step(), lease_set_event::kind::acquired),
              (std::set<std::string>{"job/0"}));
    EXPECT_EQ(a.db.acquire_many_calls.load(), 2);
}

TEST(lease_set_state, two_sets_over_the_same_names_never_both_hold_one) {
    lease_store store;
    hand_set a{store, "a", 30};
    hand_set b{store, "b", 30};
    std::map<std::string, int> takes;
    const auto check = [&] {
        for (const auto& n : names(30))
            ASSERT_FALSE(a.state.held(n) && b.state.held(n)) << n;
    };
    (void)a.step_and_finish();
    (void)b.step_and_finish();
    check();
    EXPECT_EQ(a.state.held_count(), 30U);
    EXPECT_EQ(b.state.held_count(), 0U);
    // a gives 10 up; b takes exactly those, the rest stays with a.
    for (std::size_t i = 0; i < 10; ++i)
        a.state.remove("job/" + std::to_string(i));
    const auto end = store.clock().now() + 30s;
    while (store.clock().now() < end) {
        store.advance(500ms);
        (void)a.step_and_finish();
        check();
        (void)b.step_and_finish();
        check();
    }
    EXPECT_EQ(a.state.held_count(), 20U);
    EXPECT_EQ(b.state.held_count(), 10U);
    EXPECT_TRUE(b.state.held("job/3"));
    EXPECT_EQ(store.row("job/3").holder, "b");
    EXPECT_EQ(store.row("job/13").holder, "a");
}

TEST(lease_set_state, after_a_lost_connection_it_steps_down_then_acquires_again) {
    lease_store store;
    hand_set a{store, "a", 8};
    (void)a.step_and_finish();
    const std::int64_t first = a.state.epoch("job/0");
    a.db.fail = true;
    const auto lost = run_until(store, a, store.clock().now() + 11s);
    EXPECT_EQ(of_kind(lost, lease_set_event::kind::lost).size(), 8U);
    EXPECT_EQ(a.state.held_count(), 0U);
    // Tries keep failing while the server is away, at the retry period.
    const int tries = a.db.acquire_many_calls.load();
    (void)run_until(store, a, store.clock().now() + 10s);
    EXPECT_EQ(a.db.acquire_many_calls.load(), tries); // failed calls are not counted
    a.db.fail = false;
    const auto back = run_until(store, a, store.clock().now() + 3s);
    EXPECT_EQ(of_kind(back, lease_set_event::kind::acquired).size(), 8U);
    EXPECT_EQ(a.state.held_count(), 8U);
    // Expired meanwhile (15 s): a new grant, a new epoch.
    EXPECT_GT(a.state.epoch("job/0"), first);
}

TEST(lease_set_state, add_is_acquired_at_the_next_step_in_one_round_trip) {
    lease_store store;
    hand_set a{store, "a", 0};
    EXPECT_TRUE(a.state.step().empty());
    EXPECT_EQ(a.db.acquire_many_calls.load(), 0);
    for (const auto& n : names(25, "late/"))
        a.state.add(n);
    EXPECT_EQ(a.state.next_step(), store.clock().now());
    EXPECT_EQ(of_kind(a.state.step(), lease_set_event::kind::acquired).size(), 25U);
    EXPECT_EQ(a.db.acquire_many_calls.load(), 1);
    EXPECT_THROW(a.state.add(""), config_error);
    EXPECT_THROW(a.state.add(std::string(256, 'x')), config_error);
}

TEST(lease_set_config, is_validated_with_the_elector_timing_rules) {
    lease_set_config c = config("a", 2);
    EXPECT_NO_THROW(c.validate());
    c.identity = "";
    EXPECT_THROW(c.validate(), config_error);
    c = config("a", 2);
    c.names.emplace_back();
    EXPECT_THROW(c.validate(), config_error);
    c = config("a", 2);
    c.renew_deadline = 14500ms; // ttl - margin (14 s) must exceed it
    EXPECT_THROW(c.validate(), config_error);
    c = config("a", 2);
    c.retry_period = 9s; // x 1.2 >= renew deadline
    EXPECT_THROW(c.validate(), config_error);
    c = config("a", 2);
    EXPECT_EQ(c.renew_interval(), 5s);
    c.ttl = 30s;
    c.renew_deadline = 20s;
    EXPECT_EQ(c.renew_interval(), 10s);
}

} // namespace
} // namespace pglease
