/// @file test_takeover_request.cpp
/// @brief The take-over protocol's pure parts: the request payload (what
/// `pglease run --take-over` and an elector with take_over send) and when a
/// holder is asked again.
#include "election/takeover_listener.hpp"

#include <gtest/gtest.h>

namespace pglease::detail {
namespace {

using namespace std::chrono_literals;

TEST(takeover_request, a_payload_reads_back_and_bad_ones_are_refused) {
    const takeover_request r{R"(jobs "nightly")", "host:1:ab"};
    const auto back = parse_takeover_request(takeover_payload(r));
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
        EXPECT_FALSE(parse_takeover_request(bad).has_value()) << bad;
}

TEST(takeover_schedule, a_new_holder_is_asked_at_once_then_after_doubling_pauses_up_to_a_cap) {
    takeover_schedule s{500ms, 3s};
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

} // namespace
} // namespace pglease::detail
