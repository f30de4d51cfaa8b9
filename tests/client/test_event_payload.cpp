/// @file test_event_payload.cpp
/// @brief Reading NOTIFY pg_lease payloads, as the extension sends them
/// (the JSON below is what `LISTEN pg_lease` shows in psql): the lease's
/// name, whether it is free now (what wakes a lease_set), and a
/// handover's successor.
#include "pq/event_payload.hpp"

#include <gtest/gtest.h>

namespace pglease::detail {
namespace {

std::string payload(const std::string& event, const std::string& name) {
    return R"({"event":")" + event + R"(","name":")" + name +
           R"(","holder":"x","epoch":140737488356834,"expires_at":"2026-11-25T06:44:39.672573+00:00"})";
}

TEST(event_payload, released_and_revoked_leases_are_free) {
    for (const char* event : {"released", "revoked"}) {
        const auto e = read_notified_event(payload(event, "jobs/7"));
        EXPECT_EQ(e.name, "jobs/7") << event;
        EXPECT_TRUE(e.freed) << event;
    }
}

TEST(event_payload, grants_takeovers_handovers_and_evictions_are_not) {
    for (const char* event : {"acquired", "takeover", "handover", "evict"}) {
        const auto e = read_notified_event(payload(event, "jobs/7"));
        EXPECT_EQ(e.name, "jobs/7") << event;
        EXPECT_FALSE(e.freed) << event;
    }
}

// A handover names its successor, which then confirms its grant with a
// read; no other event names one.
TEST(event_payload, a_handover_names_its_successor) {
    EXPECT_EQ(read_notified_event(payload("handover", "jobs/7")).handed_to, "x");
    for (const char* event : {"acquired", "takeover", "released", "revoked", "evict"})
        EXPECT_EQ(read_notified_event(payload(event, "jobs/7")).handed_to, "") << event;
    EXPECT_EQ(read_notified_event(R"({"event":"handover","name":"j","holder":null})").handed_to,
              "");
    EXPECT_EQ(read_notified_event(R"({"event":"handover","name":"j","holder":7})").handed_to, "");
}

TEST(event_payload, an_unreadable_payload_wakes_every_waiter) {
    for (const std::string bad :
         {"", "not json", "[1,2]", R"({"event":"released"})", R"({"name":7,"event":"acquired"})"}) {
        const auto e = read_notified_event(bad);
        EXPECT_EQ(e.name, "*") << bad;
        EXPECT_TRUE(e.freed) << bad;
    }
    // A name without a readable kind: free as far as a waiter knows.
    EXPECT_TRUE(read_notified_event(R"({"name":"a"})").freed);
    EXPECT_EQ(notified_lease_name(payload("acquired", R"(q\"uote)")), "q\"uote");
}

} // namespace
} // namespace pglease::detail
