/// @file test_lease.cpp
/// @brief pglease::lease and scoped_lease against the fake backend: the
/// local deadline, mark_lost races, waiting without busy polling.
#include "fake_backend.hpp"
#include "fake_clock.hpp"
#include "pglease/error.hpp"
#include "pglease/lease.hpp"
#include "pglease/scoped_lease.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;

lease_options opts(const char* identity) {
    lease_options o;
    o.identity = identity;
    o.ttl = 10s;
    o.safety_margin = 1s;
    return o;
}

struct lease_fixture : ::testing::Test {
    fake_clock clk;
    fake_store store{clk};
    fake_backend db_a{store, &clk};
    fake_backend db_b{store, &clk};
    lease a{db_a, "job", opts("a"), clk};
    lease b{db_b, "job", opts("b"), clk};
};

TEST_F(lease_fixture, round_trip_and_second_client_learns_the_holder) {
    EXPECT_FALSE(a.held());
    EXPECT_EQ(a.epoch(), 0);
    ASSERT_TRUE(a.acquire());
    EXPECT_TRUE(a.held());
    const auto epoch = a.epoch();
    EXPECT_GT(epoch, 0);

    EXPECT_FALSE(b.acquire());
    EXPECT_FALSE(b.held());
    EXPECT_EQ(b.holder(), "a");
    ASSERT_TRUE(b.expiry_hint());
    EXPECT_EQ(*b.expiry_hint(), clk.now() + 10s);

    clk.advance(5s);
    EXPECT_TRUE(a.renew());
    EXPECT_EQ(a.epoch(), epoch);
    EXPECT_EQ(a.deadline(), clk.now() + 9s);

    EXPECT_TRUE(a.release());
    EXPECT_FALSE(a.held());
    EXPECT_TRUE(b.acquire());
    EXPECT_GT(b.epoch(), epoch);
}

TEST_F(lease_fixture, held_turns_false_at_the_deadline_without_io) {
    ASSERT_TRUE(a.acquire());
    clk.advance(9s - 1ns);
    EXPECT_TRUE(a.held());
    clk.advance(1ns);
    EXPECT_FALSE(a.held()); // ttl - margin after the send, no call made
    EXPECT_EQ(db_a.renews(), 0);
    EXPECT_THROW((void)a.token(), lease_lost);
}

TEST_F(lease_fixture, deadline_counts_from_the_send_time) {
    const auto sent = clk.now();
    db_a.latency(3s); // the request takes 3 s to reach the server
    ASSERT_TRUE(a.acquire());
    EXPECT_EQ(a.deadline(), sent + 9s);
    EXPECT_EQ(store.row("job").expires, sent + 13s);
}

TEST_F(lease_fixture, renew_deadline_counts_from_the_send_time) {
    ASSERT_TRUE(a.acquire());
    clk.advance(3s);
    const auto sent = clk.now();
    db_a.latency(2s); // fake time passes during the call: the reply comes 2 s later
    ASSERT_TRUE(a.renew());
    EXPECT_EQ(a.deadline(), sent + 9s) << "renew's deadline must count from the send time";
    EXPECT_EQ(a.renewed_at(), sent);
    EXPECT_EQ(store.row("job").expires, sent + 12s);
}

TEST_F(lease_fixture, a_renew_blocked_past_the_local_deadline_fails_at_it) {
    ASSERT_TRUE(a.acquire());
    const auto deadline = a.deadline();
    clk.advance(5s);
    db_a.block(std::chrono::hours{1}); // a lock wait on the server
    try {
        (void)a.renew();
        ADD_FAILURE() << "renew returned from a blocked call";
    } catch (const error& e) {
        EXPECT_EQ(e.sqlstate(), "57014");
    }
    EXPECT_EQ(clk.now(), deadline) << "the call was not cut at the local deadline";
    EXPECT_FALSE(a.held());
}

TEST_F(lease_fixture, a_renew_is_bounded_by_the_callers_deadline_when_sooner) {
    ASSERT_TRUE(a.acquire());
    clk.advance(3s);
    const auto give_up = clk.now() + 2s;
    db_a.block(std::chrono::hours{1});
    EXPECT_THROW((void)a.renew(give_up), error);
    EXPECT_EQ(clk.now(), give_up);
    EXPECT_TRUE(a.held()); // unknown outcome: the old deadline still stands
    db_a.block(0s);
    EXPECT_TRUE(a.renew());
}

TEST_F(lease_fixture, a_renew_with_no_time_left_is_not_sent) {
    ASSERT_TRUE(a.acquire());
    clk.advance(5s);
    EXPECT_THROW((void)a.renew(clk.now()), error);
    EXPECT_EQ(db_a.renews(), 0);
    EXPECT_TRUE(a.held());
}

TEST_F(lease_fixture, lost_reply_does_not_extend_and_renew_after_reconnect_restores) {
    ASSERT_TRUE(a.acquire());
    const auto before = a.deadline();
    clk.advance(3s);
    db_a.fail_after(1); // the server renewed, the reply was lost
    EXPECT_THROW((void)a.renew(), connection_lost);
    EXPECT_EQ(a.deadline(), before);
    clk.advance(1s);
    EXPECT_TRUE(a.renew()); // "reconnected": same epoch renewed
    EXPECT_EQ(a.deadline(), clk.now() + 9s);
}

TEST_F(lease_fixture, mark_lost_during_a_renew_in_flight_wins) {
    ASSERT_TRUE(a.acquire());
    db_a.during_call([this] { a.mark_lost(); });
    EXPECT_FALSE(a.renew()); // the server said yes, but the loss came first
    EXPECT_FALSE(a.held());
}

TEST_F(lease_fixture, renew_of_a_taken_over_lease_is_refused) {
    ASSERT_TRUE(a.acquire());
    clk.advance(11s); // paused past the ttl
    ASSERT_TRUE(b.acquire());
    EXPECT_FALSE(a.renew());
    EXPECT_FALSE(a.held());
    EXPECT_FALSE(a.release());
}

TEST_F(lease_fixture, a_refused_acquire_ends_the_belief_before_the_local_deadline) {
    // a's grant is revoked and b granted while a's local deadline is still
    // ahead; when the server refuses a, a must stop claiming at once, not
    // at its old deadline (two leaders otherwise).
    ASSERT_TRUE(a.acquire());
    clk.advance(2s);
    ASSERT_TRUE(store.revoke("job"));
    ASSERT_TRUE(b.acquire());
    ASSERT_TRUE(a.held()) << "no I/O yet: a cannot know";
    EXPECT_FALSE(a.acquire());
    EXPECT_EQ(a.holder(), "b");
    EXPECT_FALSE(a.held()) << "refused, yet still believes it holds the lease";
    EXPECT_EQ(a.deadline(), clock::time_point::min());
    EXPECT_THROW((void)a.token(), lease_lost);
}

TEST_F(lease_fixture, acquire_for_sleeps_until_the_reported_expiry) {
    ASSERT_TRUE(b.acquire());
    clk.advance(4s); // b's grant has 6 s left
    const auto start = clk.now();
    EXPECT_TRUE(a.acquire_for(30s));
    EXPECT_EQ(clk.now() - start, 6s);
    EXPECT_EQ(db_a.acquires(), 2); // one refused try, one at the expiry
}

TEST_F(lease_fixture, acquire_for_wakes_on_a_release_event) {
    ASSERT_TRUE(b.acquire());
    // The release happens while a waits: the wait sees the event at once,
    // 10 s before the expiry a was told about.
    db_a.before_wait([this] { (void)b.release(); });
    const auto start = clk.now();
    EXPECT_TRUE(a.acquire_for(30s));
    EXPECT_EQ(clk.now(), start);
}

TEST_F(lease_fixture, acquire_for_times_out_when_the_holder_keeps_renewing) {
    ASSERT_TRUE(b.acquire());
    // The holder extends its grant to 20 s from now while a waits.
    db_a.before_wait([this] { ASSERT_TRUE(store.renew("job", "b", b.epoch(), 20s)); });
    const auto start = clk.now();
    EXPECT_FALSE(a.acquire_for(25s));
    EXPECT_EQ(clk.now() - start, 25s);
    EXPECT_EQ(db_a.acquires(), 4); // at 0, 10, 20 (reported expiries) and 25 s
}

TEST_F(lease_fixture, acquire_for_retries_after_connection_errors) {
    db_a.fail_before(2);
    EXPECT_TRUE(a.acquire_for(10s));
    EXPECT_EQ(db_a.acquires(), 3);
}

TEST_F(lease_fixture, a_release_on_a_broken_session_is_made_again_and_frees_the_lease) {
    ASSERT_TRUE(a.acquire());
    db_a.fail_before(2); // the session broke: the third call reconnects
    EXPECT_TRUE(a.release());
    EXPECT_FALSE(a.held());
    EXPECT_TRUE(b.acquire()); // free at once: b does not wait out the ttl
}

TEST_F(lease_fixture, a_release_gives_up_after_three_calls_or_once_the_grant_may_have_expired) {
    ASSERT_TRUE(a.acquire());
    db_a.fail_before(3);
    EXPECT_THROW((void)a.release(), connection_lost);
    EXPECT_FALSE(a.held());
    EXPECT_FALSE(b.acquire()); // still a's on the server, until it expires

    // Past the last request's send time + ttl nothing is left to free: one
    // call only (the next one, after the failure, would reach the store).
    ASSERT_TRUE(a.acquire());
    clk.advance(10s);
    db_a.fail_before(1);
    EXPECT_THROW((void)a.release(), connection_lost);
    EXPECT_EQ(store.row("job").holder, "a");
}

// A planned handover: the successor, told of it by NOTIFY, confirms its
// grant with a read (lease_status) instead of an acquire, which would make
// a second durable commit; its deadline counts from the read's send time
// and the time left that the server reported.
TEST_F(lease_fixture, a_handover_told_by_notify_is_confirmed_by_a_read_not_an_acquire) {
    ASSERT_TRUE(db_b.listen());
    ASSERT_TRUE(a.acquire());
    EXPECT_FALSE(b.acquire());
    clk.advance(2s);
    const auto handed = a.hand_over("b");
    ASSERT_TRUE(handed.has_value());
    EXPECT_TRUE(db_b.wait_for_change("job", clk.now())); // the NOTIFY
    const int acquires = db_b.acquires();
    db_b.latency(200ms); // the server reads the row 200 ms after the send
    const auto sent = clk.now();
    ASSERT_TRUE(b.acquire());
    EXPECT_EQ(db_b.acquires(), acquires) << "the successor wrote its own grant";
    EXPECT_EQ(db_b.statuses(), 1);
    EXPECT_TRUE(b.held());
    EXPECT_EQ(b.epoch(), *handed);
    EXPECT_EQ(b.holder(), "b");
    // From the send: 9.8 s were left when the server read the row, less
    // the 1 s margin (from the reply it would be 200 ms later).
    EXPECT_EQ(b.deadline(), sent + 9800ms - 1s);
    EXPECT_EQ(b.renewed_at(), sent);
    db_b.latency(0ms);
    clk.advance(3s);
    EXPECT_TRUE(b.renew()); // the grant is the server's: renew works on it
    EXPECT_EQ(b.epoch(), *handed);
}

TEST_F(lease_fixture, a_handover_to_another_identity_is_no_hint) {
    ASSERT_TRUE(db_b.listen());
    ASSERT_TRUE(a.acquire());
    ASSERT_TRUE(a.hand_over("c").has_value());
    EXPECT_TRUE(db_b.wait_for_change("job", clk.now()));
    const int acquires = db_b.acquires();
    EXPECT_FALSE(b.acquire());
    EXPECT_EQ(db_b.acquires(), acquires + 1);
    EXPECT_EQ(db_b.statuses(), 0);
    EXPECT_EQ(b.holder(), "c");
}

// The hint is only a hint: when the read does not show the grant as ours
// (revoked meanwhile, a forged NOTIFY), or too little of it is left to
// lead on, the acquire follows and decides.
TEST_F(lease_fixture, a_handover_hint_the_read_does_not_confirm_falls_back_to_the_acquire) {
    ASSERT_TRUE(db_b.listen());
    ASSERT_TRUE(a.acquire());
    const auto handed = a.hand_over("b");
    ASSERT_TRUE(handed.has_value());
    EXPECT_TRUE(db_b.wait_for_change("job", clk.now()));
    ASSERT_TRUE(store.revoke("job")); // after b heard of the handover
    const int acquires = db_b.acquires();
    ASSERT_TRUE(b.acquire());
    EXPECT_EQ(db_b.statuses(), 1);
    EXPECT_EQ(db_b.acquires(), acquires + 1);
    EXPECT_GT(b.epoch(), *handed); // a new grant of the free lease
}

TEST_F(lease_fixture, a_handed_grant_with_less_than_the_margin_left_is_extended_by_an_acquire) {
    ASSERT_TRUE(db_b.listen());
    ASSERT_TRUE(a.acquire());
    const auto handed = a.hand_over("b");
    ASSERT_TRUE(handed.has_value());
    EXPECT_TRUE(db_b.wait_for_change("job", clk.now()));
    clk.advance(9500ms); // 0.5 s left, under the 1 s margin
    const int acquires = db_b.acquires();
    const auto sent = clk.now();
    ASSERT_TRUE(b.acquire());
    EXPECT_EQ(db_b.statuses(), 1);
    EXPECT_EQ(db_b.acquires(), acquires + 1);
    EXPECT_EQ(b.epoch(), *handed); // extended, the same epoch
    EXPECT_EQ(b.deadline(), sent + 9s);
}

TEST(scoped_lease, holds_renews_and_releases) {
    fake_store store{system_clock()};
    lease_options o;
    o.identity = "scoped";
    o.ttl = 300ms;
    {
        scoped_lease s{std::make_unique<fake_backend>(store), "scoped", o, 0ms};
        ASSERT_TRUE(s);
        const auto epoch = s.epoch();
        std::this_thread::sleep_for(700ms); // > 2 ttl: renewed in the background
        EXPECT_TRUE(s.held());
        EXPECT_EQ(s.epoch(), epoch);
        EXPECT_EQ(store.row("scoped").holder, "scoped");

        lease_options other = o;
        other.identity = "other";
        scoped_lease refused{std::make_unique<fake_backend>(store), "scoped", other, 0ms};
        EXPECT_FALSE(refused);
        EXPECT_EQ(refused.holder(), "scoped");
    }
    EXPECT_EQ(store.row("scoped").holder, ""); // released by the destructor
}

} // namespace
} // namespace pglease::test
