/// @file test_lease_set_batches.cpp
/// @brief A lease set's first acquire of many leases on a server too
/// loaded to grant them all in one round trip in time (100 processes of
/// 1,000 leases on 2 cores): it halves its batches until grants stick,
/// never keeps a grant that came too late to be renewed, and grows its
/// batches again once the server answers fast.
#include "flaky_backend.hpp"
#include "pglease/testing.hpp"
#include "sets/lease_set_state.hpp"
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

/// A lease set of @p leases on the test store; loaded: each acquire takes
/// 100 ms of the store's time per lease, and ends by acquire_timeout = ttl
/// as pq_backend bounds it.
struct set_on_store {
    explicit set_on_store(int leases, bool loaded = true)
        : db{store, store.connect()}
        , state{db, many_config(leases), store.clock(), 7} {
        if (loaded) {
            db.per_acquire_name = 100ms;
            db.acquire_bound = 15s;
        }
    }

    /// Steps for span; every lease wanted held at the end, none ever lost.
    outcome run_holding(std::size_t leases) {
        const outcome out = step_for(store, state, span, leases);
        EXPECT_TRUE(out.all_held) << state.held_count() << " of " << leases << " held after "
                                  << out.steps << " steps";
        EXPECT_EQ(out.lost, 0) << "grants dropped: one came too late to be renewed";
        return out;
    }

    lease_store store;
    slow_backend db;
    lease_set_state state;
};

TEST(lease_set_batches, a_first_batch_answered_after_the_renew_deadline_begins_no_term) {
    // 120 leases take 12 s: within acquire_timeout, but past the renew
    // deadline of a grant counted from the send. Begun, they would be given
    // up (and released) at once, every retry; instead the server keeps
    // them for this identity and smaller batches extend them in time.
    set_on_store s{120};
    (void)s.run_holding(120); // and none lost
    ASSERT_FALSE(s.db.acquire_batches.empty());
    EXPECT_EQ(s.db.acquire_batches.front(), 120U) << "the first acquire tries every lease";
    EXPECT_GE(s.state.late_batches(), 1U) << "the whole batch was in time: no load to adapt to";
    // Every batch answered was small enough to be renewed in time.
    EXPECT_LE(s.state.acquire_batch(), 60U);
}

TEST(lease_set_batches, a_first_batch_past_every_bound_shrinks_until_grants_stick) {
    // 200 leases take 20 s, past acquire_timeout too: sent whole, never granted.
    set_on_store s{200};
    (void)s.run_holding(200);
    ASSERT_GE(s.db.acquire_batches.size(), 3U);
    EXPECT_EQ(s.db.acquire_batches[0], 200U);
    EXPECT_EQ(s.db.acquire_batches[1], 100U) << "halved after a cancelled batch";
    // Renewals kept pace with the batches that followed.
    EXPECT_GE(s.state.renew_rounds(), 1U);
}

TEST(lease_set_batches, batches_grow_again_once_the_server_answers_fast) {
    set_on_store s{120};
    (void)s.run_holding(120);
    const std::size_t shrunk = s.state.acquire_batch();
    ASSERT_LT(shrunk, 120U);

    // The load is gone; 256 more leases are wanted.
    s.db.per_acquire_name = 1ms;
    for (int i = 0; i < 256; ++i)
        s.state.add("more/" + std::to_string(i));
    (void)s.run_holding(376);
    EXPECT_GT(s.state.acquire_batch(), 2 * shrunk) << "still sending batches of " << shrunk;
}

TEST(lease_set_batches, slow_renewals_leave_the_acquires_room) {
    // Renewals answered in 3 s (renew deadline 10 s): a reserve of four of
    // them (12 s) would leave no acquire any time, so leases added later
    // would never be tried. The reserve is at most a quarter of the renew
    // deadline.
    set_on_store s{20, false};
    s.db.renew_reply = 3s;
    (void)s.run_holding(20);
    ASSERT_GE(s.state.renew_rounds(), 2U);
    ASSERT_GE(s.state.last_renew_latency(), 3s);
    for (int i = 0; i < 10; ++i)
        s.state.add("later/" + std::to_string(i));
    const outcome out = step_for(s.store, s.state, 30s, 30);
    EXPECT_TRUE(out.all_held) << s.state.held_count()
                              << " of 30 held: the added leases were never tried";
    EXPECT_EQ(out.lost, 0);
}

TEST(lease_set_batches, a_set_on_an_idle_server_acquires_in_one_round_trip) {
    set_on_store s{200, false};
    (void)s.state.step();
    EXPECT_EQ(s.state.held_count(), 200U);
    EXPECT_EQ(s.db.acquire_many_calls, 1);
    EXPECT_EQ(s.state.acquire_batch(), lease_set_state::max_acquire_batch);
}

TEST(lease_set_batches, a_freed_lease_whose_acquire_fails_leaves_the_batch_alone) {
    // Only a batch of the periodic acquire sizes the batch: one freed lease
    // whose acquire met a broken session says nothing of the server's load.
    lease_store store;
    const auto other = store.connect();
    const acquire_reply taken = other->acquire("b/003", "other", 15s, clock::time_point::max());
    ASSERT_TRUE(taken.acquired);
    test::flaky_backend db{store.connect()};
    lease_set_state state{db, many_config(4), store.clock(), 7};
    (void)state.step();
    ASSERT_EQ(state.held_count(), 3U);

    ASSERT_TRUE(other->release("b/003", "other", taken.epoch));
    state.lease_freed({"b/003"});
    db.fail_next = 1;
    (void)state.step();
    EXPECT_FALSE(state.held("b/003")) << "the acquire was to fail";
    EXPECT_EQ(state.acquire_batch(), lease_set_state::max_acquire_batch)
        << "a failed acquire of one freed lease shrank the batch";
}

} // namespace
} // namespace pglease
