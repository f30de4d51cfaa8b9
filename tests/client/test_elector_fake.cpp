/// @file test_elector_fake.cpp
/// @brief pglease::elector's threads over the fake backend in real time:
/// callbacks, release on stop, hand-over, fence-loss step-down, the stop
/// token firing at the local deadline while a call is stuck, and stop and
/// yield_to giving the lease up only once the leader work has returned.
#include "fake_backend.hpp"
#include "pglease/elector.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <utility>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// Records callbacks; waits for them with a timeout.
struct recorder {
    std::mutex mutex;
    std::condition_variable cv;
    int started = 0;
    int stopped = 0;
    std::int64_t epoch = 0;
    std::vector<std::string> leaders;
    stop_token token;
    bool throw_in_work = false;

    elector_callbacks callbacks() {
        elector_callbacks c;
        c.on_started_leading = [this](std::int64_t e, stop_token t) {
            {
                const std::lock_guard lock{mutex};
                ++started;
                epoch = e;
                token = std::move(t);
            }
            cv.notify_all();
            if (throw_in_work)
                throw std::runtime_error{"work failed"};
        };
        c.on_stopped_leading = [this] {
            {
                const std::lock_guard lock{mutex};
                ++stopped;
            }
            cv.notify_all();
        };
        c.on_new_leader = [this](const std::string& id) {
            {
                const std::lock_guard lock{mutex};
                leaders.push_back(id);
            }
            cv.notify_all();
        };
        return c;
    }

    template <typename P>
    bool wait(P pred, std::chrono::milliseconds timeout = 3000ms) {
        std::unique_lock lock{mutex};
        return cv.wait_for(lock, timeout, pred);
    }
};

elector_config fast_config(const std::string& identity, recorder& r) {
    elector_config c;
    c.lease_name = "fast";
    c.identity = identity;
    c.ttl = 600ms;
    c.renew_deadline = 400ms;
    c.retry_period = 100ms;
    c.callbacks = r.callbacks();
    return c;
}

TEST(elector_fake, leads_calls_back_and_releases_on_stop) {
    fake_store store{system_clock()};
    recorder r;
    auto e =
        std::make_unique<elector>(fast_config("one", r), std::make_unique<fake_backend>(store));
    e->start();
    ASSERT_TRUE(r.wait([&] { return r.started == 1; }));
    EXPECT_TRUE(e->leading());
    EXPECT_EQ(e->epoch(), r.epoch);
    EXPECT_EQ(e->token().epoch, r.epoch);
    std::this_thread::sleep_for(1500ms); // several ttls: renewed in the background
    EXPECT_TRUE(e->leading());
    EXPECT_EQ(e->epoch(), r.epoch);
    e->stop();
    EXPECT_EQ(r.stopped, 1);
    EXPECT_TRUE(r.token.stop_requested());
    EXPECT_FALSE(e->leading());
    EXPECT_EQ(store.row("fast").holder, ""); // released
    ASSERT_FALSE(r.leaders.empty());
    EXPECT_EQ(r.leaders.front(), "one");
    e.reset();
    EXPECT_EQ(r.stopped, 1); // exactly once
}

/// Leader work that winds down for @p wind_down after its stop token
/// fired, then notes what the store says of the lease at the moment it
/// returns: a release or handover made before that would show.
struct winding_work {
    winding_work(fake_store& s, std::chrono::milliseconds d)
        : store{s}
        , wind_down{d} {}

    fake_store& store;
    std::chrono::milliseconds wind_down;
    std::mutex mutex;
    std::condition_variable cv;
    bool returned = false;
    std::int64_t epoch = 0;
    pglease::testing::lease_row row_at_return;

    elector_callbacks callbacks() {
        elector_callbacks c;
        c.on_started_leading = [this](std::int64_t e, const stop_token& stop) {
            {
                const std::lock_guard lock{mutex};
                epoch = e;
            }
            cv.notify_all();
            stop.wait();
            std::this_thread::sleep_for(wind_down); // e.g. flushing, closing files
            const pglease::testing::lease_row row = store.row("winding");
            {
                const std::lock_guard lock{mutex};
                row_at_return = row;
                returned = true;
            }
            cv.notify_all();
        };
        c.on_stopped_leading = [] {};
        return c;
    }

    bool wait_started() {
        std::unique_lock lock{mutex};
        return cv.wait_for(lock, 3000ms, [&] { return epoch != 0; });
    }
};

/// ttl 3 s: the wind-down (300 ms) is far inside the lease, so the row at
/// the work's return shows only what the elector did, never an expiry.
elector_config winding_config(winding_work& w) {
    elector_config c;
    c.lease_name = "winding";
    c.identity = "one";
    c.ttl = 3000ms;
    c.renew_deadline = 2000ms;
    c.retry_period = 200ms;
    c.callbacks = w.callbacks();
    return c;
}

TEST(elector_fake, stop_releases_only_after_the_leader_work_returned) {
    fake_store store{system_clock()};
    winding_work w{store, 300ms};
    auto e = std::make_unique<elector>(winding_config(w), std::make_unique<fake_backend>(store));
    e->start();
    ASSERT_TRUE(w.wait_started());
    e->stop();
    const std::lock_guard lock{w.mutex};
    ASSERT_TRUE(w.returned);
    EXPECT_EQ(w.row_at_return.holder, "one") << "released while the leader work still ran";
    EXPECT_EQ(w.row_at_return.epoch, w.epoch);
    EXPECT_EQ(store.row("winding").holder, ""); // released once it returned
}

TEST(elector_fake, yield_to_hands_over_only_after_the_leader_work_returned) {
    fake_store store{system_clock()};
    winding_work w{store, 300ms};
    elector e{winding_config(w), std::make_unique<fake_backend>(store)};
    e.start();
    ASSERT_TRUE(w.wait_started());
    const handover_result r = e.yield_to("two");
    ASSERT_TRUE(r.ok()) << r.message;
    {
        const std::lock_guard lock{w.mutex};
        ASSERT_TRUE(w.returned);
        EXPECT_EQ(w.row_at_return.holder, "one") << "handed over while the leader work still ran";
        EXPECT_EQ(w.row_at_return.epoch, w.epoch);
    }
    EXPECT_EQ(store.row("winding").holder, "two");
    EXPECT_EQ(store.row("winding").epoch, r.new_epoch);
}

TEST(elector_fake, one_leader_at_a_time_and_quick_handover_on_release) {
    fake_store store{system_clock()};
    recorder r1;
    recorder r2;
    auto e1 =
        std::make_unique<elector>(fast_config("one", r1), std::make_unique<fake_backend>(store));
    e1->start();
    ASSERT_TRUE(r1.wait([&] { return r1.started == 1; }));
    elector e2{fast_config("two", r2), std::make_unique<fake_backend>(store)};
    e2.start();
    ASSERT_TRUE(r2.wait([&] { return !r2.leaders.empty(); }));
    EXPECT_EQ(r2.leaders.front(), "one");

    const auto until = steady::now() + 800ms;
    while (steady::now() < until) {
        EXPECT_FALSE(e1->leading() && e2.leading());
        std::this_thread::sleep_for(5ms);
    }
    EXPECT_TRUE(e1->leading());
    EXPECT_FALSE(e2.leading());

    const auto released = steady::now();
    e1.reset(); // stop + release: e2 is woken by the event, not its timers
    ASSERT_TRUE(r2.wait([&] { return r2.started == 1; }));
    const auto handover = steady::now() - released;
    EXPECT_LT(handover, 90ms) << "follower waited for its retry period";
    EXPECT_GT(r2.epoch, r1.epoch);
}

TEST(elector_fake, reported_fence_loss_ends_the_term_at_once) {
    // A ttl long enough that a loaded machine never loses the term by the
    // clock meanwhile (the report would then name an old epoch): the term
    // ends only because of the report.  Renewals keep succeeding on the
    // fake store, so without the report it would last for ever.
    fake_store store{system_clock()};
    recorder r;
    elector_config cfg = fast_config("one", r);
    cfg.ttl = 6s;
    cfg.renew_deadline = 4s;
    cfg.retry_period = 1s;
    auto db = std::make_unique<fake_backend>(store);
    fake_backend& calls = *db;
    elector e{cfg, std::move(db)};
    e.start();
    ASSERT_TRUE(r.wait([&] { return r.started == 1; }));
    // From here every call fails: the fake store would grant the lease
    // straight back (it is still ours there), and a loaded machine could
    // let the loop start that new term before the checks below look.
    calls.fail_before(1000000);
    const auto at = steady::now();
    e.report_lost(r.epoch);
    EXPECT_FALSE(e.leading()); // at once, no I/O
    EXPECT_TRUE(r.token.stop_requested());
    EXPECT_THROW((void)e.token(), lease_lost);
    ASSERT_TRUE(r.wait([&] { return r.stopped == 1; }, 4000ms));
    EXPECT_LT(steady::now() - at, 3s) << "stopped leading by the clock, not by the report";
}

TEST(elector_fake, stuck_renewal_stop_token_fires_at_the_local_deadline) {
    fake_store store{system_clock()};
    recorder r;
    auto owned = std::make_unique<fake_backend>(store);
    fake_backend& db = *owned;
    elector e{fast_config("one", r), std::move(owned)};
    e.start();
    ASSERT_TRUE(r.wait([&] { return r.started == 1; }));
    db.hang(1500ms); // every call now blocks for 1.5 s
    const auto from = steady::now();
    r.token.wait(); // must not wait for the stuck call
    const auto waited = steady::now() - from;
    EXPECT_LE(waited, 600ms) << "token waited past the local deadline";
    EXPECT_FALSE(e.leading());
    // The elector's thread is still stuck in the call; it reports later.
    ASSERT_TRUE(r.wait([&] { return r.stopped == 1; }, 4000ms));
    db.hang(0ms);
}

TEST(elector_fake, a_renewal_blocked_on_the_server_does_not_delay_the_step_down) {
    fake_store store{system_clock()};
    recorder r;
    auto owned = std::make_unique<fake_backend>(store);
    fake_backend& db = *owned;
    elector e{fast_config("one", r), std::move(owned)};
    e.start();
    ASSERT_TRUE(r.wait([&] { return r.started == 1; }));
    const auto from = steady::now();
    db.stall(10s); // every acquire/renew now blocks on the "server" for 10 s
    // The renew at ttl/3 (200 ms) is cut at the renew deadline (400 ms after
    // the last successful renew): the thread steps down then, not in 10 s.
    ASSERT_TRUE(r.wait([&] { return r.stopped == 1; }, 2000ms)) << "waited for the blocked call";
    const auto took = steady::now() - from;
    EXPECT_LE(took, 700ms) << "on_stopped_leading came after the renew deadline";
    EXPECT_FALSE(e.leading());
    db.stall(0ms);
}

TEST(elector_fake, failing_leader_work_resigns_and_reports) {
    fake_store store{system_clock()};
    recorder r;
    r.throw_in_work = true;
    elector e{fast_config("one", r), std::make_unique<fake_backend>(store)};
    e.start();
    ASSERT_TRUE(r.wait([&] { return r.stopped >= 1; }));
    EXPECT_GE(r.started, r.stopped);
    ASSERT_TRUE(r.wait([&] { return r.started >= 2; })); // it campaigns again
}

} // namespace
} // namespace pglease::test
