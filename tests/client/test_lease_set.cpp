/// @file test_lease_set.cpp
/// @brief The threaded lease_set over the test double's store and manual
/// clock: callbacks run on their own thread, in order, and a slow one
/// delays no renewal; remove() and stop() release after on_lost returned; a
/// wanted lease released or revoked elsewhere is tried at once.
#include "flaky_backend.hpp"
#include "lease_set_hand.hpp"
#include "pglease/lease_set.hpp"
#include "pglease/testing.hpp"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <thread>

namespace pglease {
namespace {

using namespace std::chrono_literals;
using test::flaky_backend;
using testing::lease_store;

/// Polls @p pred (real time) every 2 ms until it holds or 5 s passed.
template <typename P>
bool soon(P&& pred) {
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= end)
            return false;
        std::this_thread::sleep_for(2ms);
    }
    return true;
}

/// What the callbacks saw, in order: "+name" for on_acquired, "-name" for on_lost.
class journal {
public:
    void add(std::string line) {
        const std::lock_guard lock{m_mutex};
        m_lines.push_back(std::move(line));
    }
    std::vector<std::string> lines() const {
        const std::lock_guard lock{m_mutex};
        return m_lines;
    }

private:
    mutable std::mutex m_mutex;
    std::vector<std::string> m_lines;
};

lease_set_config config(std::size_t count) {
    return test::config("a", count);
}

TEST(lease_set, a_slow_callback_delays_no_renewal_and_callbacks_keep_their_order) {
    lease_store store;
    journal seen;
    std::promise<void> gate;
    const std::shared_future<void> open = gate.get_future().share();
    auto cfg = config(10);
    cfg.callbacks.on_acquired = [&](const std::string& name, std::int64_t, const stop_token&) {
        seen.add("+" + name);
        if (name == "job/0")
            open.wait(); // the slow callback
    };
    cfg.callbacks.on_lost = [&](const std::string& name, std::int64_t, lease_loss why) {
        EXPECT_EQ(why, lease_loss::stopped);
        EXPECT_EQ(store.row(name).holder, "a"); // released only after this returned
        seen.add("-" + name);
    };
    auto owned = std::make_unique<flaky_backend>(store.connect());
    flaky_backend& db = *owned;
    lease_set set{cfg, std::move(owned), store.clock()};
    set.start();
    ASSERT_TRUE(store.wait_until_waiting(1));
    EXPECT_EQ(set.held_count(), 10U);

    // Thirty seconds: six renewals while job/0's callback blocks the
    // callback thread.
    store.advance(30s);
    EXPECT_GE(set.renew_rounds(), 5U); // at 5, 10, ... 30 s
    EXPECT_LE(set.renew_rounds(), 6U);
    EXPECT_EQ(set.held_count(), 10U);
    // The callback thread may not have run yet on a loaded machine.
    ASSERT_TRUE(soon([&] { return !seen.lines().empty(); }));
    EXPECT_EQ(seen.lines(), std::vector<std::string>{"+job/0"});

    gate.set_value();
    ASSERT_TRUE(soon([&] { return seen.lines().size() == 10U; }));
    set.stop();
    const auto lines = seen.lines();
    ASSERT_EQ(lines.size(), 20U);
    std::map<std::string, int> balance;
    for (const auto& l : lines) {
        balance[l.substr(1)] += l[0] == '+' ? 1 : -1;
        EXPECT_GE(balance[l.substr(1)], 0) << "on_lost before on_acquired: " << l;
    }
    for (const auto& [name, b] : balance)
        EXPECT_EQ(b, 0) << name;
    EXPECT_EQ(db.release_many_calls.load(), 1);
    EXPECT_EQ(set.release_rounds(), 1U);
    for (const auto& n : cfg.names)
        EXPECT_EQ(store.row(n).holder, "") << n;
}

TEST(lease_set, remove_from_another_thread_signals_the_token_then_releases) {
    lease_store store;
    journal seen;
    stop_token job3;
    std::mutex token_mutex;
    auto cfg = config(4);
    cfg.callbacks.on_acquired = [&](const std::string& name, std::int64_t, const stop_token& stop) {
        if (name == "job/3") {
            const std::lock_guard lock{token_mutex};
            job3 = stop;
        }
    };
    cfg.callbacks.on_lost = [&](const std::string& name, std::int64_t, lease_loss why) {
        seen.add(name + " " + to_string(why) + " holder=" + store.row(name).holder);
    };
    lease_set set{cfg, store.connect(), store.clock()};
    set.start();
    ASSERT_TRUE(store.wait_until_waiting(1));
    ASSERT_TRUE(set.held("job/3"));
    const std::int64_t epoch = set.epoch("job/3");
    EXPECT_EQ(epoch, store.row("job/3").epoch);
    EXPECT_EQ(set.token("job/3").epoch, epoch);

    set.remove("job/3");
    ASSERT_TRUE(soon([&] { return store.row("job/3").holder.empty(); }));
    EXPECT_EQ(seen.lines(), std::vector<std::string>{"job/3 removed holder=a"});
    {
        const std::lock_guard lock{token_mutex};
        EXPECT_TRUE(job3.stop_requested());
    }
    EXPECT_FALSE(set.held("job/3"));
    EXPECT_EQ(set.epoch("job/3"), 0);
    EXPECT_THROW((void)set.token("job/3"), lease_lost);
    EXPECT_EQ(set.held_names(), (std::vector<std::string>{"job/0", "job/1", "job/2"}));

    set.add("job/9");
    ASSERT_TRUE(soon([&] { return set.held("job/9"); }));
    EXPECT_EQ(store.row("job/9").holder, "a");
    EXPECT_THROW(set.add(""), config_error);
}

TEST(lease_set, a_release_elsewhere_wakes_it_and_only_the_freed_lease_is_tried) {
    lease_store store;
    const std::int64_t held_b = store.mark_held_elsewhere("job/0", "b", 60s);
    (void)store.mark_held_elsewhere("job/1", "c", 60s);
    auto owned = std::make_unique<flaky_backend>(store.connect());
    flaky_backend& db = *owned;
    lease_set set{config(2), std::move(owned), store.clock()};
    set.start();
    ASSERT_TRUE(store.wait_until_waiting(1));
    EXPECT_EQ(set.held_count(), 0U);
    // both tried, both held elsewhere; tried again once it listens
    EXPECT_EQ(db.acquire_many_calls.load(), 2);

    // A grant to someone else is no reason to try: no wake, no round trip.
    (void)store.mark_held_elsewhere("job/1", "d", 60s); // a takeover of an expired grant
    (void)store.mark_held_elsewhere("other", "d", 60s); // a lease it does not want
    EXPECT_EQ(db.acquire_many_calls.load(), 2);

    // A release of a wanted lease wakes it at once (the clock stands still:
    // not the retry period, not the expiry), and only that lease is tried.
    ASSERT_TRUE(store.release("job/0", "b", held_b));
    ASSERT_TRUE(soon([&] { return set.held("job/0"); }));
    EXPECT_EQ(db.acquire_many_calls.load(), 3);
    EXPECT_EQ(db.last_acquired(), std::vector<std::string>{"job/0"});
    EXPECT_EQ(store.row("job/0").holder, "a");
    EXPECT_EQ(store.row("job/1").holder, "d");

    // A revoke wakes it the same way.
    ASSERT_TRUE(store.revoke("job/1"));
    ASSERT_TRUE(soon([&] { return set.held("job/1"); }));
    EXPECT_EQ(db.last_acquired(), std::vector<std::string>{"job/1"});
    set.stop();
}

TEST(lease_set, listens_only_while_another_holder_has_a_lease_it_wants) {
    // Every lease free: granted, and no LISTEN (a listening session is sent
    // every grant of the database).
    {
        lease_store free;
        auto owned = std::make_unique<flaky_backend>(free.connect());
        flaky_backend& db = *owned;
        lease_set set{config(2), std::move(owned), free.clock()};
        set.start();
        ASSERT_TRUE(soon([&] { return set.held_count() == 2; }));
        ASSERT_TRUE(free.wait_until_waiting(1));
        EXPECT_EQ(db.listens.load(), 0);
        set.stop();
    }
    lease_store store;
    // One held elsewhere: it listens (and tries that one once more), and
    // unlistens once it holds both.
    const std::int64_t held_b = store.mark_held_elsewhere("job/1", "b", 60s);
    auto owned = std::make_unique<flaky_backend>(store.connect());
    flaky_backend& db = *owned;
    lease_set set{config(2), std::move(owned), store.clock()};
    set.start();
    ASSERT_TRUE(store.wait_until_waiting(1));
    EXPECT_TRUE(set.held("job/0"));
    EXPECT_FALSE(set.held("job/1"));
    EXPECT_EQ(db.listens.load(), 1);
    EXPECT_EQ(db.unlistens.load(), 0);
    EXPECT_EQ(db.acquire_many_calls.load(), 2); // the refusal, then the try after LISTEN
    ASSERT_TRUE(store.release("job/1", "b", held_b));
    ASSERT_TRUE(soon([&] { return set.held("job/1"); }));
    ASSERT_TRUE(soon([&] { return db.unlistens.load() == 1; }));
    EXPECT_EQ(db.listens.load(), 1);
    set.stop();
}

TEST(lease_set, a_release_between_the_refusal_and_the_listen_is_not_missed) {
    lease_store store;
    const std::int64_t held_b = store.mark_held_elsewhere("job/0", "b", 60s);
    auto owned = std::make_unique<flaky_backend>(store.connect());
    flaky_backend& db = *owned;
    // The release comes after the refusal and before the subscription: no
    // event reaches the set, and the clock stands still (no retry period,
    // no expiry): only the try after LISTEN can find it free.
    db.before_listen = [&] { EXPECT_TRUE(store.release("job/0", "b", held_b)); };
    lease_set set{config(1), std::move(owned), store.clock()};
    set.start();
    ASSERT_TRUE(soon([&] { return set.held("job/0"); }));
    EXPECT_EQ(db.acquire_many_calls.load(), 2);
    set.stop();
}

TEST(lease_set, report_lost_ends_the_term_at_once) {
    lease_store store;
    journal seen;
    std::promise<void> gate;
    const std::shared_future<void> open = gate.get_future().share();
    auto cfg = config(2);
    cfg.callbacks.on_lost = [&](const std::string& name, std::int64_t, lease_loss why) {
        seen.add(name + " " + to_string(why));
        open.wait(); // the term is not forgotten (nor taken again) before this returns
    };
    lease_set set{cfg, store.connect(), store.clock()};
    set.start();
    ASSERT_TRUE(store.wait_until_waiting(1));
    set.report_lost("job/1", set.epoch("job/1") + 1); // another epoch: ignored
    EXPECT_TRUE(set.held("job/1"));
    set.report_lost("job/1", set.epoch("job/1"));
    EXPECT_FALSE(set.held("job/1"));
    EXPECT_THROW((void)set.token("job/1"), lease_lost);
    ASSERT_TRUE(soon([&] { return seen.lines().size() == 1U; }));
    EXPECT_EQ(seen.lines().front(), "job/1 lost");
    EXPECT_TRUE(set.held("job/0"));
    gate.set_value();
    // Still wanted and still this identity's on the server: a new term.
    ASSERT_TRUE(soon([&] { return set.held("job/1"); }));
}

} // namespace
} // namespace pglease
