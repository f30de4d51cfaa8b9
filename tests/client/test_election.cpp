/// @file test_election.cpp
/// @brief The elector's state machine, table-driven with a fake backend and
/// a fake clock (as client-go tests tryAcquireOrRenew). No server needed.
#include "fake_backend.hpp"
#include "fake_clock.hpp"
#include "pglease/internal/election.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

/// What a table row does before its expectations are checked.
enum class op {
    step,        ///< election.step()
    advance,     ///< fake time passes (arg)
    fail_before, ///< the next arg calls fail before reaching the store
    fail_after,  ///< the next arg calls run, then their reply is lost
    latency,     ///< each call takes arg of fake time to reach the store
    block,       ///< acquire/renew block arg of fake time on the server (cut at their deadline)
    steal,       ///< "other" acquires the lease (only works if free/expired)
    revoke,      ///< an administrator revokes the lease
    mark_lost,   ///< the application saw a fence rejection
    resign,      ///< election.resign(true)
};

struct action {
    op what;
    ms arg{0};
    /// Events the action produced: S started, N new leader, L stopped
    /// (lost), D stopped (renew deadline), R stopped (resigned).
    std::string events;
    bool leading;
    /// Expected election.next_step() - origin, when set.
    std::optional<ms> next{};
    /// Expected lease deadline - origin, when set.
    std::optional<ms> deadline{};
};

struct scenario {
    const char* name;
    std::vector<action> actions;
    /// Expected store holder at the end ("" free, "me", "other").
    const char* final_holder;
};

// Config for every row: ttl 10 s, renew deadline 6 s, retry 2 s, no jitter
// (deterministic), margin 1 s => renew interval min(10/3, 6-2) = 3333 ms,
// local deadline = sent + 9 s.
elector_config table_config() {
    elector_config c;
    c.lease_name = "table";
    c.identity = "me";
    c.ttl = 10s;
    c.renew_deadline = 6s;
    c.retry_period = 2s;
    c.jitter_factor = 1.0;
    c.safety_margin = 1s;
    c.callbacks.on_started_leading = [](std::int64_t, const stop_token&) {};
    c.callbacks.on_stopped_leading = [] {};
    return c;
}

char code(const election_event& e) {
    switch (e.what) {
    case election_event::kind::started_leading:
        return 'S';
    case election_event::kind::new_leader:
        return 'N';
    case election_event::kind::term_refused:
        return 'X';
    case election_event::kind::stopped_leading:
        switch (e.reason) {
        case step_down_reason::lost:
            return 'L';
        case step_down_reason::renew_deadline:
            return 'D';
        case step_down_reason::resigned:
            return 'R';
        }
    }
    return '?';
}

const std::vector<scenario>& scenarios() {
    static const std::vector<scenario> table = {
        {"free lease: the first step acquires",
         {{op::step, 0ms, "SN", true, 3333ms, 9000ms}},
         "me"},
        {"held elsewhere: follower learns the holder and sleeps until the expiry",
         {{op::steal, 0ms, "", false},
          {op::step, 0ms, "N", false, 2000ms},
          {op::advance, 1500ms, "", false},
          {op::step, 0ms, "", false, 3500ms}},
         "other"},
        {"follower wakes at the reported expiry when it is sooner than the retry",
         {{op::steal, 0ms, "", false},
          {op::advance, 9000ms, "", false},
          {op::step, 0ms, "N", false, 10000ms},
          {op::advance, 1000ms, "", false},
          {op::step, 0ms, "SN", true, 13333ms, 19000ms}},
         "me"},
        {"leader renews every ttl/3, deadline measured from each send",
         {{op::step, 0ms, "SN", true, 3333ms, 9000ms},
          {op::advance, 3333ms, "", true},
          {op::step, 0ms, "", true, 6666ms, 12333ms},
          {op::advance, 3333ms, "", true},
          {op::step, 0ms, "", true, 9999ms, 15666ms}},
         "me"},
        {"a failed renew is retried after the retry period",
         {{op::step, 0ms, "SN", true},
          {op::advance, 3333ms, "", true},
          {op::fail_before, ms{1}, "", true},
          {op::step, 0ms, "", true, 5333ms, 9000ms},
          {op::advance, 2000ms, "", true},
          {op::step, 0ms, "", true, 8666ms, 14333ms}},
         "me"},
        {"renewals keep failing: step down at the renew deadline, before the local one",
         {{op::step, 0ms, "SN", true},
          {op::fail_before, ms{100}, "", true},
          {op::advance, 3333ms, "", true},
          {op::step, 0ms, "", true, 5333ms},
          {op::advance, 2000ms, "", true},
          {op::step, 0ms, "", true, 6000ms},
          {op::advance, 667ms, "", true},
          {op::step, 0ms, "D", false}},
         "me"},
        {"renew refused (revoked): step down at once, then campaign again",
         {{op::step, 0ms, "SN", true},
          {op::revoke, 0ms, "", true},
          {op::advance, 3333ms, "", true},
          {op::step, 0ms, "L", false, 3333ms},
          {op::step, 0ms, "S", true}},
         "me"},
        {"fence rejection: mark_lost ends the term without any I/O",
         {{op::step, 0ms, "SN", true},
          {op::mark_lost, 0ms, "", false},
          {op::fail_before, ms{1}, "", false},
          {op::step, 0ms, "L", false}},
         "me"},
        {"paused past the ttl: the term ends by the clock, the new holder is seen",
         {{op::step, 0ms, "SN", true},
          {op::advance, 11000ms, "", false},
          {op::steal, 0ms, "", false},
          {op::step, 0ms, "L", false},
          {op::step, 0ms, "N", false}},
         "other"},
        {"renew ran but its reply was lost: the deadline does not move",
         {{op::step, 0ms, "SN", true, 3333ms, 9000ms},
          {op::fail_after, ms{100}, "", true},
          {op::advance, 3333ms, "", true},
          {op::step, 0ms, "", true, 5333ms, 9000ms},
          {op::advance, 2667ms, "", true},
          {op::step, 0ms, "D", false}},
         "me"},
        {"call latency: the deadline counts from the send time, not the reply",
         {{op::latency, 1500ms, "", false}, {op::step, 0ms, "SN", true, 3333ms, 9000ms}},
         "me"},
        {"renew latency: the deadline counts from the renew's send time, not the reply",
         {{op::step, 0ms, "SN", true, 3333ms, 9000ms},
          {op::advance, 3333ms, "", true},
          {op::latency, 1500ms, "", true},
          {op::step, 0ms, "", true, 6666ms, 12333ms}},
         "me"},
        {"a renew blocked on the server is cut at the renew deadline: step down then",
         {{op::step, 0ms, "SN", true, 3333ms, 9000ms},
          {op::advance, 3333ms, "", true},
          {op::block, 60000ms, "", true},
          {op::step, 0ms, "", true, 6000ms, 9000ms},
          {op::step, 0ms, "D", false, 8000ms}},
         "me"},
        {"resign releases and ends the term",
         {{op::step, 0ms, "SN", true}, {op::resign, 0ms, "R", false}},
         ""},
        {"a connection error as follower: retry after the retry period",
         {{op::fail_before, ms{1}, "", false},
          {op::step, 0ms, "", false, 2000ms},
          {op::advance, 2000ms, "", false},
          {op::step, 0ms, "SN", true}},
         "me"},
    };
    return table;
}

class election_table : public ::testing::TestWithParam<scenario> {};

TEST_P(election_table, runs) {
    const scenario& sc = GetParam();
    fake_clock clk;
    fake_store store{clk};
    fake_backend mine{store, &clk};
    fake_backend other{store, &clk};
    const elector_config config = table_config();
    election e{mine, config, clk, 1};

    for (std::size_t i = 0; i < sc.actions.size(); ++i) {
        const action& a = sc.actions[i];
        SCOPED_TRACE("action " + std::to_string(i));
        std::vector<election_event> events;
        switch (a.what) {
        case op::step:
            events = e.step();
            break;
        case op::advance:
            clk.advance(a.arg);
            break;
        case op::fail_before:
            mine.fail_before(static_cast<int>(a.arg.count()));
            break;
        case op::fail_after:
            mine.fail_after(static_cast<int>(a.arg.count()));
            break;
        case op::latency:
            mine.latency(a.arg);
            break;
        case op::block:
            mine.block(a.arg);
            break;
        case op::steal:
            (void)other.acquire(config.lease_name, "other", 10s);
            break;
        case op::revoke:
            (void)other.revoke(config.lease_name);
            break;
        case op::mark_lost:
            e.current().mark_lost();
            break;
        case op::resign:
            events = e.resign(true);
            break;
        }
        std::string got;
        for (const auto& ev : events)
            got += code(ev);
        EXPECT_EQ(got, a.events);
        EXPECT_EQ(e.leading(), a.leading);
        if (a.next) {
            EXPECT_EQ(std::chrono::duration_cast<ms>(e.next_step() - fake_clock::origin()),
                      *a.next);
        }
        if (a.deadline) {
            EXPECT_EQ(std::chrono::duration_cast<ms>(e.current().deadline() - fake_clock::origin()),
                      *a.deadline);
        }
    }
    EXPECT_EQ(store.row(config.lease_name).holder, sc.final_holder);
}

INSTANTIATE_TEST_SUITE_P(state_machine, election_table, ::testing::ValuesIn(scenarios()),
                         [](const ::testing::TestParamInfo<scenario>& param) {
                             std::string n;
                             for (const char c : std::string{param.param.name})
                                 n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             return n.substr(0, 60) + "_" + std::to_string(param.index);
                         });

TEST(election, jitter_stays_within_retry_period_times_factor) {
    fake_clock clk;
    fake_store store{clk};
    fake_backend mine{store, &clk};
    fake_backend other{store, &clk};
    elector_config config = table_config();
    config.jitter_factor = 1.2;
    (void)other.acquire(config.lease_name, "other", std::chrono::hours{1});
    election e{mine, config, clk, 42};
    bool varied = false;
    std::optional<clock::duration> first;
    for (int i = 0; i < 50; ++i) {
        (void)e.step();
        const auto wait = e.next_step() - clk.now();
        EXPECT_GE(wait, 2000ms);
        EXPECT_LE(wait, 2400ms);
        if (first && *first != wait)
            varied = true;
        first = wait;
        clk.advance_to(e.next_step());
    }
    EXPECT_TRUE(varied);
    EXPECT_EQ(mine.acquires(), 50);
}

TEST(election, epoch_is_kept_across_a_reacquire_by_the_same_identity) {
    fake_clock clk;
    fake_store store{clk};
    fake_backend mine{store, &clk};
    const elector_config config = table_config();
    election e{mine, config, clk, 1};
    (void)e.step();
    const auto first = e.current().epoch();
    (void)e.resign(false); // not released: still ours on the "server"
    EXPECT_FALSE(e.leading());
    // No acquire within the retry period, whatever wakes it (after a
    // handover, resign(false), the successor holds the lease).
    const int acquires = mine.acquires();
    (void)e.step();
    EXPECT_FALSE(e.leading());
    EXPECT_EQ(mine.acquires(), acquires);
    clk.advance(config.retry_period);
    (void)e.step();
    EXPECT_TRUE(e.leading());
    EXPECT_EQ(e.current().epoch(), first);
}

} // namespace
} // namespace pglease::test
