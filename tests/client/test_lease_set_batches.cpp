/// @file test_lease_set_batches.cpp
/// @brief A lease set's first acquire of many leases on a server too
/// loaded to grant them all in one round trip in time (100 processes of
/// 1,000 leases on 2 cores): it halves its batches until grants stick,
/// never keeps a grant that came too late to be renewed, and grows its
/// batches again once the server answers fast.
#include "pglease/lease_set_state.hpp"
#include "pglease/testing.hpp"
#include "slow_backend.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace pglease {
namespace {

using namespace std::chrono_literals;
using testing::lease_store;

// ttl 15 s: renew every 5 s, give up 10 s after the last renewal; a call
// of pq_backend ends by acquire_timeout = ttl (as bench/peers sets it).
lease_set_config many_config(int leases) {
    lease_set_config c;
    for (int i = 0; i < leases; ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "b/%03d", i);
        c.names.emplace_back(name);
    }
    c.identity = "set";
    c.ttl = 15s;
    c.renew_deadline = 10s;
    c.retry_period = 2s;
    return c;
}

struct outcome {
    int lost = 0; ///< terms that ended (a grant dropped, a renewal missed)
    int steps = 0;
    bool all_held = false;
};

/// Steps @p state at each due time for @p span of the store's time (at
/// most 1,000 steps), then says whether it holds @p leases; every term
/// that ended meanwhile is counted and its callback done.
outcome step_for(lease_store& store, lease_set_state& state, clock::duration span,
                 std::size_t leases) {
    outcome out;
    const auto end = store.clock().now() + span;
    for (; out.steps < 1000 && store.clock().now() < end; ++out.steps) {
        const auto now = store.clock().now();
        if (state.next_step() > now)
            store.advance(std::min(state.next_step(), end) - now);
        for (const lease_set_event& e : state.step())
            if (e.what == lease_set_event::kind::lost) {
                ++out.lost;
                state.callback_done(e.name, e.epoch);
            }
    }
    out.all_held = state.held_count() == leases;
    return out;
}

// Long enough to grant every lease in batches and renew them several times.
constexpr auto span = 120s;

/// 100 ms of the server's time per lease acquired in one call.
void load(slow_backend& db) {
    db.per_acquire_name = 100ms;
    db.acquire_bound = 15s;
}

TEST(lease_set_batches, a_first_batch_answered_after_the_renew_deadline_is_never_sent) {
    // 120 leases take 12 s: within acquire_timeout, but past the renew
    // deadline of a grant counted from the send. Sent whole, they would be
    // granted and dropped at once, every retry.
    lease_store store;
    slow_backend db{store, store.connect()};
    load(db);
    lease_set_state state{db, many_config(120), store.clock(), 7};

    const outcome out = step_for(store, state, span, 120);
    EXPECT_TRUE(out.all_held) << state.held_count() << " of 120 held after " << out.steps << " steps";
    EXPECT_EQ(out.lost, 0) << "grants dropped: one came too late to be renewed";
    ASSERT_FALSE(db.acquire_batches.empty());
    EXPECT_EQ(db.acquire_batches.front(), 120U) << "the first acquire tries every lease";
    EXPECT_GE(db.cancelled, 1) << "the whole batch was answered: no load to adapt to";
    // Every batch answered was small enough to be renewed in time.
    EXPECT_LE(state.acquire_batch(), 60U);
}

TEST(lease_set_batches, a_first_batch_past_every_bound_shrinks_until_grants_stick) {
    // 200 leases take 20 s, past acquire_timeout too: sent whole, never granted.
    lease_store store;
    slow_backend db{store, store.connect()};
    load(db);
    lease_set_state state{db, many_config(200), store.clock(), 7};

    const outcome out = step_for(store, state, span, 200);
    EXPECT_TRUE(out.all_held) << state.held_count() << " of 200 held after " << out.steps << " steps";
    EXPECT_EQ(out.lost, 0);
    ASSERT_GE(db.acquire_batches.size(), 3U);
    EXPECT_EQ(db.acquire_batches[0], 200U);
    EXPECT_EQ(db.acquire_batches[1], 100U) << "halved after a cancelled batch";
    // Renewals kept pace with the batches that followed.
    EXPECT_GE(state.renew_rounds(), 1U);
}

TEST(lease_set_batches, batches_grow_again_once_the_server_answers_fast) {
    lease_store store;
    slow_backend db{store, store.connect()};
    load(db);
    lease_set_state state{db, many_config(120), store.clock(), 7};
    ASSERT_TRUE(step_for(store, state, span, 120).all_held);
    const std::size_t shrunk = state.acquire_batch();
    ASSERT_LT(shrunk, 120U);

    // The load is gone; 256 more leases are wanted.
    db.per_acquire_name = 1ms;
    for (int i = 0; i < 256; ++i)
        state.add("more/" + std::to_string(i));
    const outcome out = step_for(store, state, span, 376);
    EXPECT_TRUE(out.all_held);
    EXPECT_EQ(out.lost, 0);
    EXPECT_GT(state.acquire_batch(), 2 * shrunk) << "still sending batches of " << shrunk;
}

TEST(lease_set_batches, a_set_on_an_idle_server_acquires_in_one_round_trip) {
    lease_store store;
    slow_backend db{store, store.connect()};
    lease_set_state state{db, many_config(200), store.clock(), 7};
    (void)state.step();
    EXPECT_EQ(state.held_count(), 200U);
    EXPECT_EQ(db.acquire_many_calls, 1);
    EXPECT_EQ(state.acquire_batch(), lease_set_state::max_acquire_batch);
}

} // namespace
} // namespace pglease
