/// @file test_failed_work.cpp
/// @brief The same rule in every holder of many leases, step by step on the
/// test double's store and manual clock: when the callback that starts a
/// term's work throws (work_failed()), the term ends with reason "failed",
/// the lease is released once the stop callback returned, and it rests a
/// retry period before it is acquired again (an event freeing it included),
/// as an elector whose leader work failed resigns and campaigns later.
#include "groups/group_state.hpp"
#include "lease_set_hand.hpp"
#include "pglease/group.hpp"

#include <gtest/gtest.h>

namespace pglease::test {
namespace {

lease_set_event only_event(const std::vector<lease_set_event>& events) {
    EXPECT_EQ(events.size(), 1U);
    return events.empty() ? lease_set_event{} : events.front();
}

TEST(failed_work, a_lease_set_gives_the_lease_up_releases_it_and_rests_a_retry_period) {
    lease_store store;
    hand_set s{store, "a", 2}; // job/0, job/1; retry period 2 s
    ASSERT_EQ(of_kind(s.step_and_finish(), lease_set_event::kind::acquired).size(), 2U);
    const std::int64_t first = s.state.epoch("job/0");

    s.state.work_failed("job/0", first);
    const lease_set_event lost = only_event(s.state.step());
    EXPECT_EQ(lost.what, lease_set_event::kind::lost);
    EXPECT_EQ(lost.name, "job/0");
    EXPECT_EQ(lost.why, lease_loss::failed);
    EXPECT_FALSE(s.state.held("job/0"));
    EXPECT_TRUE(s.state.held("job/1")) << "only the failed term ends";
    EXPECT_EQ(store.row("job/0").holder, "a") << "released only after on_lost returned";

    s.state.callback_done("job/0", first);
    (void)s.state.step();
    EXPECT_EQ(store.row("job/0").holder, "") << "released, not left to expire";

    // Its own release's event, and the periodic tries, within the rest.
    s.state.lease_freed({"job/0"});
    EXPECT_TRUE(of_kind(s.step_and_finish(), lease_set_event::kind::acquired).empty());
    store.advance(1500ms);
    (void)s.step_and_finish();
    EXPECT_FALSE(s.state.held("job/0")) << "not acquired again within the retry period";

    // After it: a new term with a new epoch.
    const auto events = run_until(store, s, store.clock().now() + 3s);
    EXPECT_EQ(of_kind(events, lease_set_event::kind::acquired), std::set<std::string>{"job/0"});
    EXPECT_TRUE(s.state.held("job/0"));
    EXPECT_GT(s.state.epoch("job/0"), first);
}

TEST(failed_work, a_lease_set_ignores_a_failure_of_an_older_term) {
    lease_store store;
    hand_set s{store, "a", 1};
    (void)s.step_and_finish();
    const std::int64_t epoch = s.state.epoch("job/0");
    s.state.work_failed("job/0", epoch + 1000); // not this term's
    EXPECT_TRUE(s.state.step().empty());
    EXPECT_TRUE(s.state.held("job/0"));
}

group_config group(const std::string& identity) {
    group_config c;
    c.group = "orders";
    c.shards = numbered_shards("orders", 2);
    return hand_timed(std::move(c), identity);
}

TEST(failed_work, a_group_member_stops_the_shard_releases_it_and_rests_a_retry_period) {
    lease_store store;
    auto db = store.connect();
    group_state g{*db, group("a"), store.clock(), 1};
    (void)g.step();
    const std::string shard = g.owned().front();
    const std::string lease_name = "pglease:group/orders/shard/" + shard;
    const std::int64_t first = g.grant(shard)->epoch();

    g.work_failed(shard);
    const auto events = g.step();
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events.front().what, group_event::kind::shard_stopping);
    EXPECT_EQ(events.front().shard, shard);
    EXPECT_EQ(events.front().reason, shard_stop_reason::failed);
    EXPECT_TRUE(g.holds(shard)) << "held until its work stopped";

    g.work_stopped(shard);
    (void)g.step();
    EXPECT_FALSE(g.holds(shard));
    EXPECT_EQ(store.row(lease_name).holder, "") << "released, not left to expire";

    // Still assigned here, and free: not taken again within the rest.
    g.request_scan();
    (void)g.step();
    store.advance(1500ms);
    g.request_scan();
    (void)g.step();
    EXPECT_FALSE(g.holds(shard));

    // After it (at the latest the next periodic read): taken again.
    const auto until = store.clock().now() + 10s;
    while (!g.holds(shard) && store.clock().now() < until) {
        store.advance(std::max(g.next_step() - store.clock().now(), clock::duration{1ms}));
        (void)g.step();
    }
    EXPECT_TRUE(g.holds(shard));
    EXPECT_EQ(store.row(lease_name).holder, "a");
    EXPECT_GT(g.grant(shard)->epoch(), first);
}

} // namespace
} // namespace pglease::test
