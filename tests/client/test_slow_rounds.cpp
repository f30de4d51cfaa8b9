/// @file test_slow_rounds.cpp
/// @brief Many-lease round trips that take a visible time (issue 27, item
/// 4): a lease set and a group member count each lease's local deadline
/// from the time the round was *sent*, as the single lease does, never
/// from the time the store ran it or the reply arrived:
/// deadline = send + ttl - safety margin.
///
/// The store's manual clock moves inside the call: `there` on the way to
/// the store (the server starts the ttl later than the send), `back` on
/// the way back (the reply arrives later still). Each test reads held() at
/// one tick before and at the expected deadline, without stepping (a step
/// could renew and move it).
#include "groups/group_state.hpp"
#include "pglease/backend.hpp"
#include "pglease/group.hpp"
#include "pglease/testing.hpp"
#include "sets/lease_set_state.hpp"
#include "slow_backend.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace pglease {
namespace {

using namespace std::chrono_literals;
using testing::lease_store;

// ttl 15 s, margin 1 s (the default: ttl / 10, at most 1 s): deadline =
// send + 14 s. The round takes 300 ms there and 400 ms back.
constexpr auto ttl = 15s;
constexpr auto local_validity = 14s;
constexpr auto there = 300ms;
constexpr auto back = 400ms;

lease_set_config set_config() {
    lease_set_config c;
    c.names = {"slow/a", "slow/b", "slow/c"};
    c.identity = "set";
    c.ttl = ttl;
    c.renew_deadline = 10s;
    c.retry_period = 2s;
    return c;
}

/// Advances the store's clock to @p t (never backwards).
void advance_to(lease_store& store, clock::time_point t) {
    const auto now = store.clock().now();
    ASSERT_LE(now, t);
    if (t > now)
        store.advance(t - now);
}

TEST(slow_rounds, lease_set_acquire_many_deadline_counts_from_the_send) {
    lease_store store;
    slow_backend db{store, store.connect()};
    db.there = there;
    db.back = back;
    lease_set_state state{db, set_config(), store.clock(), 7};

    const auto sent = store.clock().now();
    (void)state.step();
    ASSERT_EQ(db.acquire_many_calls, 1);
    ASSERT_EQ(state.held_count(), 3U);
    // The reply came 700 ms after the send.
    EXPECT_EQ(store.clock().now(), sent + there + back);

    advance_to(store, sent + local_validity - 1ms);
    for (const auto& n : set_config().names)
        EXPECT_TRUE(state.held(n)) << n << ": held until send + ttl - margin";
    advance_to(store, sent + local_validity);
    for (const auto& n : set_config().names)
        EXPECT_FALSE(state.held(n)) << n << ": still held at send + ttl - margin (deadline "
                                    << "counted from the store's time or the reply's)";
}

TEST(slow_rounds, lease_set_renew_many_deadline_counts_from_the_send) {
    lease_store store;
    slow_backend db{store, store.connect()};
    lease_set_state state{db, set_config(), store.clock(), 7};
    (void)state.step();
    ASSERT_EQ(state.held_count(), 3U);

    // The renewal is due at renew_interval (5 s); that round is slow.
    db.there = there;
    db.back = back;
    advance_to(store, state.next_step());
    const auto sent = store.clock().now();
    (void)state.step();
    ASSERT_EQ(db.renew_many_calls, 1);
    ASSERT_EQ(state.renew_rounds(), 1U);
    EXPECT_EQ(store.clock().now(), sent + there + back);

    advance_to(store, sent + local_validity - 1ms);
    for (const auto& n : set_config().names)
        EXPECT_TRUE(state.held(n)) << n << ": held until send + ttl - margin";
    advance_to(store, sent + local_validity);
    for (const auto& n : set_config().names)
        EXPECT_FALSE(state.held(n)) << n << ": still held at send + ttl - margin (deadline "
                                    << "counted from the store's time or the reply's)";
}

group_config member_config() {
    group_config c;
    c.group = "slow";
    c.shards = numbered_shards("slow", 3);
    c.identity = "m";
    c.ttl = ttl;
    c.renew_deadline = 10s;
    c.retry_period = 2s;
    return c;
}

TEST(slow_rounds, group_member_renew_many_deadline_counts_from_the_send) {
    lease_store store;
    slow_backend db{store, store.connect()};
    group_state state{db, member_config(), store.clock(), 1};
    (void)state.step();
    ASSERT_TRUE(state.joined());
    ASSERT_EQ(state.owned().size(), 3U);

    db.there = there;
    db.back = back;
    const auto rounds = state.renew_rounds();
    // Step at each due time until the first renew round ran (the member
    // may read the group before it): that round is the slow one.
    clock::time_point sent{};
    for (int i = 0; i < 20 && state.renew_rounds() == rounds; ++i) {
        advance_to(store, state.next_step());
        sent = store.clock().now();
        (void)state.step();
    }
    ASSERT_EQ(state.renew_rounds(), rounds + 1);

    advance_to(store, sent + local_validity - 1ms);
    EXPECT_TRUE(state.joined()) << "membership held until send + ttl - margin";
    for (const auto& s : member_config().shards)
        EXPECT_TRUE(state.holds(s)) << s << ": held until send + ttl - margin";
    advance_to(store, sent + local_validity);
    EXPECT_FALSE(state.joined()) << "membership still held at send + ttl - margin";
    for (const auto& s : member_config().shards)
        EXPECT_FALSE(state.holds(s)) << s << ": still held at send + ttl - margin (deadline "
                                     << "counted from the store's time or the reply's)";
}

TEST(slow_rounds, a_group_takeover_that_waits_out_its_bound_leaves_time_to_renew) {
    lease_store store;
    slow_backend db{store, store.connect()};
    group_state state{db, member_config(), store.clock(), 1};
    (void)state.step();
    ASSERT_EQ(state.owned().size(), 3U);
    // A second member joins and takes its share, then stops stepping
    // (SIGSTOP) with, as far as takeovers can tell, a fenced transaction
    // open on each of its shards.
    const auto other_db = store.connect();
    group_config other_config = member_config();
    other_config.identity = "stalled";
    group_state other{*other_db, other_config, store.clock(), 2};
    // Work stops at once when a shard moves.
    const auto step = [](group_state& g) {
        for (const group_event& e : g.step())
            if (e.what == group_event::kind::shard_stopping)
                g.work_stopped(e.shard);
    };
    for (int i = 0; i < 50 && other.owned().empty(); ++i) {
        advance_to(store, std::min(state.next_step(), other.next_step()));
        step(state);
        step(other);
    }
    ASSERT_FALSE(other.owned().empty());
    const auto kept = state.owned();
    ASSERT_FALSE(kept.empty());

    // Its grants expire; the first member takes them over, each acquire
    // waiting until its bound.
    db.stall_takeovers = true;
    for (int i = 0; i < 50 && db.stalled == 0; ++i) {
        advance_to(store, state.next_step());
        step(state);
    }
    ASSERT_EQ(db.stalled, 1) << "no takeover was tried";
    advance_to(store, state.next_step());
    step(state);
    for (const auto& s : kept)
        EXPECT_TRUE(state.holds(s)) << s << ": lost, the takeover's wait used the renew deadline";
}

} // namespace
} // namespace pglease
