/// @file test_election_downstream.cpp
/// @brief The term-start rule with downstream databases (extension 1.4):
/// every downstream floor is raised to the new epoch before the term starts;
/// one that fails, answers too late or is already higher refuses the term
/// and the lease is released. Over the fake backend and clock.
#include "fake_backend.hpp"
#include "fake_clock.hpp"
#include "fake_downstream.hpp"
#include "pglease/error.hpp"

#include "pglease/internal/election.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;

// ttl 10 s, margin 1 s: the local deadline is 9 s after the acquire was sent.
elector_config config_with(std::size_t downstreams) {
    elector_config c;
    c.lease_name = "jobs";
    c.identity = "me";
    c.ttl = 10s;
    c.renew_deadline = 6s;
    c.retry_period = 2s;
    c.jitter_factor = 1.0;
    c.safety_margin = 1s;
    c.downstreams.resize(downstreams);
    c.callbacks.on_started_leading = [](std::int64_t, const stop_token&) {};
    c.callbacks.on_stopped_leading = [] {};
    return c;
}

struct fixture {
    fake_clock clk;
    fake_store store{clk};
    fake_backend mine{store, &clk};
    fake_downstream first{clk};
    fake_downstream second{clk};
    election e{mine, config_with(2), clk, 1, {&first, &second}};

    [[nodiscard]] std::optional<lease_record> record() {
        fake_backend look{store, &clk};
        return look.status("jobs");
    }
};

bool has(const std::vector<election_event>& events, election_event::kind k) {
    for (const auto& ev : events)
        if (ev.what == k)
            return true;
    return false;
}

TEST(election_downstream, raises_every_floor_before_the_term_starts) {
    fixture f;
    bool in_term_at_raise = true;
    f.second.before_raise = [&] { in_term_at_raise = f.e.in_term(); };
    const auto events = f.e.step();
    ASSERT_TRUE(has(events, election_event::kind::started_leading));
    const std::int64_t epoch = f.e.current().epoch();
    // Raised by the step that started the term, to its epoch, before it began.
    EXPECT_FALSE(in_term_at_raise);
    EXPECT_EQ(f.first.floors["fake-store/jobs"], epoch);
    EXPECT_EQ(f.second.floors["fake-store/jobs"], epoch);
    EXPECT_TRUE(f.e.leading());
    // Renewals raise nothing: only a new term does.
    f.clk.advance(3500ms);
    (void)f.e.step();
    EXPECT_EQ(f.first.raises, 1);
    EXPECT_TRUE(f.e.leading());
}

TEST(election_downstream, an_unreachable_downstream_refuses_the_term_and_releases) {
    fixture f;
    f.second.fail = true;
    const auto events = f.e.step();
    EXPECT_FALSE(has(events, election_event::kind::started_leading));
    ASSERT_TRUE(has(events, election_event::kind::term_refused));
    for (const auto& ev : events)
        if (ev.what == election_event::kind::term_refused) {
            EXPECT_NE(ev.why.find("downstream 2 of 2"), std::string::npos) << ev.why;
            EXPECT_NE(ev.why.find("unreachable"), std::string::npos) << ev.why;
        }
    EXPECT_FALSE(f.e.leading());
    EXPECT_FALSE(f.e.in_term());
    // Released at once on the server, not left to expire.
    const auto rec = f.record();
    ASSERT_TRUE(rec.has_value());
    EXPECT_FALSE(rec->valid);
    // Campaigns again after a retry period, not sooner: a step woken early
    // (the release's own NOTIFY) acquires nothing.
    EXPECT_EQ(f.e.next_step() - f.clk.now(), 2s);
    const int acquires = f.mine.acquires();
    f.clk.advance(1s);
    EXPECT_TRUE(f.e.step().empty());
    EXPECT_EQ(f.mine.acquires(), acquires);
    f.second.fail = false;
    f.clk.advance(1s);
    const auto again = f.e.step();
    ASSERT_TRUE(has(again, election_event::kind::started_leading));
    EXPECT_EQ(f.second.floors["fake-store/jobs"], f.e.current().epoch());
}

TEST(election_downstream, a_raise_past_the_local_deadline_refuses_the_term) {
    fixture f;
    f.first.latency = 5s;
    f.second.latency = 5s; // 10 s in all: past the 9 s local deadline
    const auto events = f.e.step();
    EXPECT_FALSE(has(events, election_event::kind::started_leading));
    EXPECT_TRUE(has(events, election_event::kind::term_refused));
    EXPECT_FALSE(f.e.leading());
}

TEST(election_downstream, a_last_raise_that_returns_at_the_local_deadline_refuses_the_term) {
    fixture f;
    f.first.latency = 4s;
    f.second.latency = 5s; // the last raise returns at 9 s: the local deadline itself
    const auto events = f.e.step();
    EXPECT_GT(f.second.floors["fake-store/jobs"], 0); // the raise itself went through
    EXPECT_FALSE(has(events, election_event::kind::started_leading));
    ASSERT_TRUE(has(events, election_event::kind::term_refused));
    for (const auto& ev : events) {
        if (ev.what == election_event::kind::term_refused) {
            EXPECT_NE(ev.why.find("local deadline passed"), std::string::npos) << ev.why;
        }
    }
    EXPECT_FALSE(f.e.leading());
    EXPECT_FALSE(f.e.in_term());
    const auto rec = f.record();
    ASSERT_TRUE(rec.has_value());
    EXPECT_FALSE(rec->valid); // released, not left to expire
}

TEST(election_downstream,
     a_last_raise_whose_answer_comes_after_the_local_deadline_refuses_the_term) {
    fixture f;
    f.second.latency = 8s;     // in time at the server (8 s < 9 s)...
    f.second.late_answer = 2s; // ...but the answer arrives at 10 s
    const auto events = f.e.step();
    EXPECT_FALSE(has(events, election_event::kind::started_leading));
    EXPECT_TRUE(has(events, election_event::kind::term_refused));
    EXPECT_FALSE(f.e.leading());
    // Just before the deadline is still in time.
    fixture g;
    g.second.latency = 8s;
    g.second.late_answer = 999ms;
    EXPECT_TRUE(has(g.e.step(), election_event::kind::started_leading));
}

TEST(election_downstream, a_floor_already_above_the_epoch_refuses_the_term) {
    fixture f;
    f.first.floors["fake-store/jobs"] = std::int64_t{1} << 60;
    const auto events = f.e.step();
    EXPECT_TRUE(has(events, election_event::kind::term_refused));
    EXPECT_FALSE(has(events, election_event::kind::started_leading));
    EXPECT_EQ(f.second.raises, 0); // stops at the first failure
}

TEST(election_downstream, a_store_id_that_cannot_be_read_refuses_the_term) {
    fixture f;
    int calls = 0; // the acquire passes; the store id (the next call) fails
    f.mine.during_call([&] {
        if (++calls == 2)
            throw connection_lost{"fake: the store went away"};
    });
    const auto events = f.e.step();
    EXPECT_FALSE(has(events, election_event::kind::started_leading));
    ASSERT_TRUE(has(events, election_event::kind::term_refused));
    for (const auto& ev : events) {
        if (ev.what == election_event::kind::term_refused) {
            EXPECT_NE(ev.why.find("lease_store_id(): fake: the store went away"), std::string::npos)
                << ev.why;
        }
    }
    EXPECT_EQ(f.first.raises, 0); // nothing raised under an unknown store id
    EXPECT_FALSE(f.e.in_term());
    const auto rec = f.record();
    ASSERT_TRUE(rec.has_value());
    EXPECT_FALSE(rec->valid); // released
}

TEST(election_downstream, no_downstreams_no_store_id_call) {
    fake_clock clk;
    fake_store store{clk};
    fake_backend mine{store, &clk};
    election e{mine, config_with(0), clk, 1};
    ASSERT_TRUE(has(e.step(), election_event::kind::started_leading));
}

} // namespace
} // namespace pglease::test
