/// @file test_testing_double.cpp
/// @brief The public test double (pglease/testing.hpp): scripted states
/// drive the real elector, lease and scoped_lease on a manual clock, and
/// fence_check() refuses exactly what the fence trigger refuses.
#include "pglease/elector.hpp"
#include "pglease/lease.hpp"
#include "pglease/scoped_lease.hpp"
#include "pglease/testing.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

namespace pglease::testing {
namespace {

using namespace std::chrono_literals;

elector_config config(std::atomic<int>& started, std::atomic<int>& stopped) {
    elector_config c;
    c.lease_name = "scheduler";
    c.identity = "me";
    c.callbacks.on_started_leading = [&started](std::int64_t, const stop_token&) { ++started; };
    c.callbacks.on_stopped_leading = [&stopped] { ++stopped; };
    return c;
}

/// The expectation of one fence_check() call.
struct fence_case {
    const char* what;
    void (*script)(lease_store&, std::int64_t epoch);
    const char* sqlstate; ///< empty: the write passes
};

TEST(testing_double, fence_check_refuses_what_the_trigger_refuses) {
    const fence_case cases[] = {
        {"current unexpired grant", [](lease_store&, std::int64_t) {}, ""},
        {"renewed grant", [](lease_store& s, std::int64_t e) { (void)s.renew("l", "me", e, 10s); },
         ""},
        {"newer epoch granted", [](lease_store& s, std::int64_t) { s.mark_held_elsewhere("l"); },
         "LS001"},
        {"handed over", [](lease_store& s, std::int64_t e) { (void)s.handover("l", "me", e, "b"); },
         "LS001"},
        {"expired", [](lease_store& s, std::int64_t) { s.advance(11s); }, "LS002"},
        {"expire()", [](lease_store& s, std::int64_t) { s.expire("l"); }, "LS002"},
        {"released", [](lease_store& s, std::int64_t e) { s.release("l", "me", e); }, "LS002"},
        {"revoked", [](lease_store& s, std::int64_t) { s.revoke("l"); }, "LS002"},
    };
    for (const fence_case& c : cases) {
        SCOPED_TRACE(c.what);
        lease_store store;
        const std::int64_t epoch = store.mark_held("l", "me", 10s);
        c.script(store, epoch);
        const fence_token token{"l", epoch, ""};
        if (*c.sqlstate == '\0') {
            EXPECT_NO_THROW(store.fence_check(token));
            continue;
        }
        try {
            store.fence_check(token);
            ADD_FAILURE() << "write passed";
        } catch (const fence_rejected& e) {
            EXPECT_EQ(e.sqlstate(), c.sqlstate);
        }
    }
}

TEST(testing_double, scripted_states_drive_the_elector) {
    lease_store store;
    std::atomic<int> started{0};
    std::atomic<int> stopped{0};
    const elector_config cfg = config(started, stopped);
    store.mark_held_elsewhere(cfg.lease_name, "other");
    elector e{cfg, store.connect(), store.clock()};
    e.start();
    ASSERT_TRUE(store.wait_until_waiting());
    EXPECT_FALSE(e.leading());
    EXPECT_EQ(e.leader(), "other");

    const std::int64_t epoch = store.mark_held(cfg.lease_name, cfg.identity);
    EXPECT_TRUE(e.leading()); // settled: the elector acquired before mark_held returned
    EXPECT_EQ(e.epoch(), epoch);

    store.advance(cfg.ttl * 4); // time passes: renewed on schedule
    EXPECT_TRUE(e.leading());
    EXPECT_EQ(e.epoch(), epoch);
    EXPECT_GT(store.row(cfg.lease_name).expires, store.clock().now() + cfg.ttl / 2);

    store.mark_held_elsewhere(cfg.lease_name); // the event makes it renew: refused
    EXPECT_FALSE(e.leading());
    EXPECT_EQ(e.leader(), "someone-else");
    e.stop();
    EXPECT_EQ(started.load(), 1);
    EXPECT_EQ(stopped.load(), 1);
    // A stopped elector's session (still alive) is no loop to wait for.
    const auto from = std::chrono::steady_clock::now();
    store.mark_held(cfg.lease_name, "later");
    store.mark_held(cfg.lease_name, "later still");
    EXPECT_LT(std::chrono::steady_clock::now() - from, 500ms);
}

TEST(testing_double, yield_to_hands_the_lease_to_a_campaigning_successor) {
    lease_store store;
    std::atomic<int> a_started{0}, a_stopped{0}, b_started{0}, b_stopped{0};
    elector_config cfg_a = config(a_started, a_stopped);
    elector_config cfg_b = config(b_started, b_stopped);
    cfg_b.identity = "successor";
    elector a{cfg_a, store.connect(), store.clock()};
    a.start();
    ASSERT_TRUE(store.wait_until_waiting());
    ASSERT_TRUE(a.leading());
    elector b{cfg_b, store.connect(), store.clock()};
    b.start();
    ASSERT_TRUE(store.wait_until_waiting(2));
    ASSERT_EQ(b.leader(), "me");

    const handover_result r = a.yield_to("successor");
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(a_stopped.load(), 1); // on_stopped_leading ran before yield_to returned
    ASSERT_TRUE(store.wait_until_waiting(2));
    EXPECT_TRUE(b.leading()); // woken by the handover, no time passed
    EXPECT_EQ(b.epoch(), r.new_epoch);
    EXPECT_FALSE(a.leading());
    EXPECT_EQ(store.row(cfg_a.lease_name).holder, "successor");

    // Not leading any more: nothing to hand over.
    EXPECT_EQ(a.yield_to("successor").what, handover_result::outcome::not_leading);
    store.advance(cfg_a.ttl * 2); // b renews; a stays a follower
    EXPECT_TRUE(b.leading());
    EXPECT_EQ(a_started.load(), 1);
}

TEST(testing_double, revoke_ends_the_term_at_once_and_expire_at_the_next_renew) {
    lease_store store;
    std::atomic<int> started{0};
    std::atomic<int> stopped{0};
    const elector_config cfg = config(started, stopped);
    elector e{cfg, store.connect(), store.clock()};
    e.start();
    ASSERT_TRUE(store.wait_until_waiting());
    ASSERT_TRUE(e.leading()); // the lease was free
    const std::int64_t first = e.epoch();
    // Revoked: the event makes it renew (refused), the term ends, and as the
    // only candidate it takes the free lease again with a new epoch.
    EXPECT_TRUE(store.revoke(cfg.lease_name));
    EXPECT_EQ(stopped.load(), 1);
    EXPECT_TRUE(e.leading());
    const std::int64_t second = e.epoch();
    EXPECT_GT(second, first);

    EXPECT_TRUE(store.expire(cfg.lease_name)); // no event: not noticed yet
    EXPECT_EQ(e.epoch(), second);
    EXPECT_EQ(stopped.load(), 1);
    store.advance(cfg.renew_interval()); // the scheduled renew is refused
    EXPECT_EQ(stopped.load(), 2);
    EXPECT_GT(e.epoch(), second);

    store.mark_held_elsewhere(cfg.lease_name); // lost, and kept away
    EXPECT_FALSE(e.leading());
    EXPECT_EQ(stopped.load(), 3);
    store.advance(cfg.ttl / 2);
    EXPECT_FALSE(e.leading());
}

TEST(testing_double, run_fenced_rejection_ends_the_elector_term) {
    lease_store store;
    std::atomic<int> started{0};
    std::atomic<int> stopped{0};
    elector e{config(started, stopped), store.connect(), store.clock()};
    e.start();
    ASSERT_TRUE(store.wait_until_waiting());
    ASSERT_TRUE(e.leading());
    const std::int64_t epoch = e.epoch();
    EXPECT_EQ(testing::run_fenced(e, store, [] { return 7; }), 7);
    store.expire("scheduler"); // the server's view only: no event
    int ran = 0;
    EXPECT_THROW(testing::run_fenced(e, store, [&] { ++ran; }), fence_rejected);
    EXPECT_EQ(ran, 0);
    ASSERT_TRUE(store.settle()); // the elector's thread ended the term
    EXPECT_EQ(stopped.load(), 1);
    EXPECT_GT(e.epoch(), epoch); // and, the lease being free, took it again

    store.mark_held_elsewhere("scheduler");
    EXPECT_FALSE(e.leading());
    EXPECT_THROW(testing::run_fenced(e, store, [&] { ++ran; }), lease_lost);
    EXPECT_EQ(ran, 0);
}

TEST(testing_double, lease_and_scoped_lease_on_the_double) {
    lease_store store;
    auto db = store.connect();
    lease_options o;
    o.identity = "me";
    lease l{*db, "job", o, store.clock()};
    ASSERT_TRUE(l.acquire());
    store.mark_held_elsewhere("job");
    EXPECT_TRUE(l.held()); // locally: until the next renew or the deadline
    try {
        testing::run_fenced(l, store, [] {});
        ADD_FAILURE() << "stale write passed";
    } catch (const fence_rejected& e) {
        EXPECT_TRUE(e.stale_epoch());
    }
    EXPECT_FALSE(l.held());

    lease_options mine;
    mine.identity = "scoped";
    {
        scoped_lease refused{store.connect(), "job", mine, 0ms, store.clock()};
        EXPECT_FALSE(refused);
        EXPECT_EQ(refused.holder(), "someone-else");
    }
    store.revoke("job");
    {
        scoped_lease s{store.connect(), "job", mine, 0ms, store.clock()};
        ASSERT_TRUE(s);
        EXPECT_EQ(store.row("job").holder, "scoped");
        EXPECT_NO_THROW(testing::run_fenced(s, store, [] {}));
    }
    EXPECT_EQ(store.row("job").holder, ""); // released by the destructor
}

TEST(testing_double, a_lost_grants_lock_delay_keeps_other_holders_out) {
    lease_store store;
    ASSERT_TRUE(store.acquire("jobs", "a", 2s, 5s).acquired);
    EXPECT_EQ(store.row("jobs").lock_delay, 5s);
    store.advance(3s); // expired 1 s ago: 4 s of delay left
    const auto refused = store.acquire("jobs", "b", 2s);
    EXPECT_FALSE(refused.acquired);
    EXPECT_EQ(refused.holder, "a");
    EXPECT_EQ(refused.remaining, std::chrono::microseconds{4s});
    store.advance(4s);
    EXPECT_TRUE(store.acquire("jobs", "b", 2s).acquired);

    // The lost grant's own holder is not kept out; a revoke starts the
    // delay at once; a release skips it.
    ASSERT_TRUE(store.acquire("own", "a", 2s, 5s).acquired);
    store.advance(3s);
    EXPECT_TRUE(store.acquire("own", "a", 2s, 5s).acquired);
    ASSERT_TRUE(store.revoke("own"));
    EXPECT_FALSE(store.acquire("own", "b", 2s).acquired);
    store.advance(5s);
    EXPECT_TRUE(store.acquire("own", "b", 2s).acquired);
    const auto released = store.acquire("rel", "a", 2s, 5s);
    ASSERT_TRUE(store.release("rel", "a", released.epoch));
    EXPECT_TRUE(store.acquire("rel", "b", 2s).acquired);
}

TEST(testing_double, advance_needs_the_stores_own_clock) {
    lease_store real{system_clock()};
    EXPECT_THROW(real.advance(1s), std::logic_error);
}

} // namespace
} // namespace pglease::testing
