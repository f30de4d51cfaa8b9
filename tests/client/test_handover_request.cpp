/// @file test_handover_request.cpp
/// @brief The handover request protocol's pure parts: the request payload (what
/// `pglease run --take-over` and an elector with request_handover send) and when a
/// holder is asked again; and that a listener going away leaves no thread
/// inside libpq (a process exiting then aborts in libkrb5's destructors).
#include "pglease/internal/handover_request.hpp"

#include "loopback_port.hpp"

#include <gtest/gtest.h>

#include <optional>

namespace pglease::detail {
namespace {

using namespace std::chrono_literals;

TEST(handover_request, a_payload_reads_back_and_bad_ones_are_refused) {
    const handover_request r{R"(jobs "nightly")", "host:1:ab"};
    const auto back = parse_handover_request(handover_payload(r));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->lease, r.lease);
    EXPECT_EQ(back->requester, r.requester);
    const std::vector<std::string> bad_payloads{"",
                                                "[]",
                                                R"({"lease":"a"})",
                                                R"({"lease":"","requester":"b"})",
                                                R"({"lease":"a","requester":7})",
                                                R"({"lease":"a","requester":")" +
                                                    std::string(256, 'x') + R"("})"};
    for (const std::string& bad : bad_payloads)
        EXPECT_FALSE(parse_handover_request(bad).has_value()) << bad;
}

TEST(handover_schedule, a_new_holder_is_asked_at_once_then_after_doubling_pauses_up_to_a_cap) {
    handover_schedule s{500ms, 3s};
    const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
    EXPECT_FALSE(s.due("", t0)); // nobody holds it: nobody to ask
    EXPECT_EQ(s.next(), std::chrono::steady_clock::time_point::max());
    ASSERT_TRUE(s.due("a", t0));
    s.asked("a", t0);
    EXPECT_FALSE(s.due("a", t0 + 499ms));
    EXPECT_EQ(s.next(), t0 + 500ms);
    s.asked("a", t0 + 500ms); // then 1 s, 2 s, 3 s, 3 s
    EXPECT_EQ(s.next(), t0 + 1500ms);
    s.asked("a", t0 + 1500ms);
    s.asked("a", t0 + 3500ms);
    EXPECT_EQ(s.next(), t0 + 6500ms);
    s.asked("a", t0 + 6500ms);
    EXPECT_EQ(s.next(), t0 + 9500ms);
    EXPECT_TRUE(s.due("b", t0 + 6600ms)); // a new holder: at once, first pause again
    s.asked("b", t0 + 6600ms);
    EXPECT_EQ(s.next(), t0 + 7100ms);
}

TEST(handover_listener, going_away_mid_connect_closes_its_session_before_returning) {
    const test::loopback_port silent{true};
    std::optional<handover_listener> listener;
    listener.emplace(silent.conninfo("connect_timeout=10"), "jobs", "me", nullptr, nullptr);
    const int conn = silent.accept_within(5s); // its connect is under way
    ASSERT_GE(conn, 0) << "the listener never connected";
    const auto t0 = std::chrono::steady_clock::now();
    listener.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, handover_listener::stop_wait);
    // Closed by the time the destructor returned (libpq's connect_timeout
    // would have kept it open 10 s); 200 ms for the loopback to deliver it.
    EXPECT_TRUE(test::loopback_port::closed_by_client(conn, 200ms));
    ::close(conn);
}

} // namespace
} // namespace pglease::detail
