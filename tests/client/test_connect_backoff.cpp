/// @file test_connect_backoff.cpp
/// @brief The connection herd's brake (issue 27): attempts that cost the
/// server a backend start without a session back off exponentially, with
/// jitter, per server, shared by every backend of the process; attempts
/// refused at once do not.
#include "connect_backoff.hpp"

#include <gtest/gtest.h>

namespace pglease::detail {
namespace {

using namespace std::chrono_literals;
using dur = std::chrono::steady_clock::duration;

TEST(connect_backoff, delay_doubles_from_the_base_up_to_the_cap_with_jitter_in_the_upper_half) {
    EXPECT_EQ(backoff_delay(1, 2s, 15s, 1.0), dur{2s});
    EXPECT_EQ(backoff_delay(1, 2s, 15s, 0.0), dur{1s});
    EXPECT_EQ(backoff_delay(2, 2s, 15s, 1.0), dur{4s});
    EXPECT_EQ(backoff_delay(3, 2s, 15s, 1.0), dur{8s});
    EXPECT_EQ(backoff_delay(4, 2s, 15s, 1.0), dur{15s});
    EXPECT_EQ(backoff_delay(40, 2s, 15s, 0.0), dur{7500ms});
    EXPECT_EQ(backoff_delay(0, 2s, 15s, 1.0), dur::zero());
    EXPECT_EQ(backoff_delay(3, 2s, 0s, 1.0), dur::zero()) << "cap 0: no backoff";
}

TEST(connect_backoff, only_attempts_that_cost_the_server_a_backend_count_as_overloaded) {
    EXPECT_TRUE(overloaded_attempt(
        "connection to server at \"127.0.0.1\", port 5432 failed: timeout expired\n"));
    EXPECT_TRUE(overloaded_attempt("FATAL:  sorry, too many clients already"));
    EXPECT_TRUE(overloaded_attempt(
        "FATAL:  remaining connection slots are reserved for non-replication superuser"));
    EXPECT_FALSE(overloaded_attempt("connection to server at \"127.0.0.1\", port 5432 failed: "
                                    "Connection refused"));
    EXPECT_FALSE(overloaded_attempt("FATAL:  the database system is starting up"));
}

TEST(connect_backoff, overloaded_failures_back_off_per_server_and_a_session_ends_it) {
    connect_backoff b;
    const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
    EXPECT_EQ(b.wait_left("a", t0), dur::zero());
    // Refused at once: no pause.
    b.failed("a", t0, false, 2s, 15s);
    EXPECT_EQ(b.wait_left("a", t0), dur::zero());
    EXPECT_EQ(b.failures("a"), 0);
    // Timed out: 1-2 s, then 2-4 s, then 4-8 s.
    b.failed("a", t0, true, 2s, 15s);
    EXPECT_GE(b.wait_left("a", t0), dur{1s});
    EXPECT_LE(b.wait_left("a", t0), dur{2s});
    EXPECT_EQ(b.wait_left("b", t0), dur::zero()) << "another server is not affected";
    const auto t1 = t0 + 2s;
    EXPECT_EQ(b.wait_left("a", t1), dur::zero());
    b.failed("a", t1, true, 2s, 15s);
    EXPECT_GE(b.wait_left("a", t1), dur{2s});
    EXPECT_LE(b.wait_left("a", t1), dur{4s});
    const auto t2 = t1 + 4s;
    b.failed("a", t2, true, 2s, 15s);
    EXPECT_GE(b.wait_left("a", t2), dur{4s});
    EXPECT_LE(b.wait_left("a", t2), dur{8s});
    EXPECT_EQ(b.failures("a"), 3);
    b.succeeded("a");
    EXPECT_EQ(b.wait_left("a", t2), dur::zero());
    EXPECT_EQ(b.failures("a"), 0);
}

TEST(connect_backoff, the_jitter_spreads_a_fleet_that_failed_at_the_same_moment) {
    // 64 clients (one state each, as 64 processes) time out at once: their
    // next attempts spread over the upper half of the backoff.
    const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
    dur lo = dur::max(), hi = dur::zero();
    for (int i = 0; i < 64; ++i) {
        connect_backoff b;
        b.failed("s", t0, true, 2s, 15s);
        const auto w = b.wait_left("s", t0);
        lo = std::min(lo, w);
        hi = std::max(hi, w);
    }
    EXPECT_GE(lo, dur{1s});
    EXPECT_LE(hi, dur{2s});
    EXPECT_GT(hi - lo, dur{500ms}) << "64 draws should spread over most of [1 s, 2 s]";
}

} // namespace
} // namespace pglease::detail
