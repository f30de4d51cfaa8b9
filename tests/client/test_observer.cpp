/// @file test_observer.cpp
/// @brief pglease::observer over the test double: what it reports for
/// grants, renewals, releases, handovers, expiry; wait_for_change; a
/// failed reading marks the view stale and is retried.
#include "fake_backend.hpp"
#include "pglease/error.hpp"
#include "pglease/observer.hpp"
#include "pglease/testing.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;

lease_view view(const char* holder, std::int64_t epoch, bool valid) {
    lease_view v;
    v.holder = holder;
    v.epoch = epoch;
    v.valid = valid;
    return v;
}

TEST(observer_compare, table) {
    struct row {
        const char* what;
        lease_view before;
        lease_view after;
        std::optional<lease_change> expected;
    };
    const row rows[] = {
        {"first grant", view("", 0, false), view("a", 5, true), lease_change::acquired},
        {"seen held at start", lease_view{}, view("a", 5, true), lease_change::acquired},
        {"renewed", view("a", 5, true), view("a", 5, true), std::nullopt},
        {"takeover", view("a", 5, true), view("b", 6, true), lease_change::acquired},
        {"handover", view("a", 5, true), view("b", 6, true), lease_change::acquired},
        {"re-grant to the same holder", view("a", 5, true), view("a", 7, true),
         lease_change::acquired},
        {"released", view("a", 5, true), view("", 5, false), lease_change::freed},
        {"expired", view("a", 5, true), view("a", 5, false), lease_change::expired},
        {"expired, then revoked", view("a", 5, false), view("", 5, false), std::nullopt},
        {"still free", view("", 5, false), view("", 5, false), std::nullopt},
    };
    for (const row& r : rows) {
        SCOPED_TRACE(r.what);
        EXPECT_EQ(compare(r.before, r.after), r.expected);
    }
    EXPECT_STREQ(to_string(lease_change::expired), "expired");
}

TEST(observer_options_validate, refuses_bad_settings) {
    observer_options o;
    EXPECT_THROW(o.validate(), config_error); // no lease name
    o.lease_name = "x";
    EXPECT_NO_THROW(o.validate());
    o.resync_period = 0ms;
    EXPECT_THROW(o.validate(), config_error);
    o.resync_period = 1s;
    o.retry_period = -1ms;
    EXPECT_THROW(observer{o}, config_error);
}

/// Records the changes an observer reports.
struct changes {
    std::mutex mutex;
    std::vector<std::pair<lease_change, lease_view>> seen;

    std::function<void(lease_change, const lease_view&)> callback() {
        return [this](lease_change c, const lease_view& v) {
            const std::lock_guard lock{mutex};
            seen.emplace_back(c, v);
        };
    }
    std::vector<std::pair<lease_change, lease_view>> take() {
        const std::lock_guard lock{mutex};
        return std::exchange(seen, {});
    }
};

TEST(observer_double, reports_grants_releases_handovers_and_expiry_never_acquires) {
    testing::lease_store store;
    changes c;
    observer_options o;
    o.lease_name = "jobs";
    o.resync_period = 1h; // only notifications and the known expiry wake it
    o.on_change = c.callback();
    observer obs{o, store.connect(), store.clock()};
    obs.start();
    ASSERT_TRUE(store.wait_until_waiting());
    EXPECT_NE(obs.current().read_at, clock::time_point{});
    EXPECT_FALSE(obs.current().valid);
    EXPECT_EQ(obs.current().version, 0U);

    const std::int64_t a = store.mark_held("jobs", "a", 10s);
    auto got = c.take();
    ASSERT_EQ(got.size(), 1U);
    EXPECT_EQ(got[0].first, lease_change::acquired);
    EXPECT_EQ(got[0].second.holder, "a");
    EXPECT_EQ(got[0].second.epoch, a);
    ASSERT_TRUE(obs.current().expires);
    EXPECT_EQ(*obs.current().expires, store.clock().now() + 10s);

    // Renewed (no notification): at the old expiry it reads again, sees the
    // new one, reports nothing.
    store.advance(5s);
    ASSERT_TRUE(store.renew("jobs", "a", a, 10s));
    store.advance(6s);
    EXPECT_TRUE(c.take().empty());
    EXPECT_TRUE(obs.current().valid);
    EXPECT_EQ(*obs.current().expires, testing::manual_clock::origin() + 15s);

    ASSERT_TRUE(store.release("jobs", "a", a));
    got = c.take();
    ASSERT_EQ(got.size(), 1U);
    EXPECT_EQ(got[0].first, lease_change::freed);
    EXPECT_EQ(got[0].second.holder, "");

    const std::int64_t b = store.mark_held("jobs", "b", 10s);
    const auto handed = store.handover("jobs", "b", b, "c");
    ASSERT_TRUE(handed);
    got = c.take();
    ASSERT_EQ(got.size(), 2U);
    EXPECT_EQ(got[1].first, lease_change::acquired);
    EXPECT_EQ(got[1].second.holder, "c");
    EXPECT_EQ(got[1].second.epoch, *handed);

    store.advance(11s); // c never renews
    got = c.take();
    ASSERT_EQ(got.size(), 1U);
    EXPECT_EQ(got[0].first, lease_change::expired);
    EXPECT_EQ(got[0].second.holder, "c");
    EXPECT_FALSE(obs.current().valid);
    EXPECT_EQ(obs.current().version, 5U);        // a, freed, b, c, expired
    EXPECT_EQ(store.row("jobs").epoch, *handed); // the observer took nothing
}

TEST(observer_double, wait_for_change_returns_the_next_change_or_times_out) {
    testing::lease_store store;
    observer_options o;
    o.lease_name = "jobs";
    observer obs{o, store.connect(), store.clock()};
    obs.start();
    ASSERT_TRUE(store.wait_until_waiting());
    EXPECT_FALSE(obs.wait_for_change(30ms));
    const std::uint64_t before = obs.current().version;
    store.mark_held_elsewhere("jobs", "z");
    const auto v = obs.wait_for_change(1s, before);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->holder, "z");
    EXPECT_EQ(v->version, before + 1);
    EXPECT_FALSE(obs.wait_for_change(30ms)); // nothing since
}

TEST(observer_double, a_failed_reading_is_stale_and_retried) {
    fake_store store{system_clock()}; // real time
    store.mark_held("jobs", "a", 30s);
    auto owned = std::make_unique<fake_backend>(store);
    owned->fail_before(2); // LISTEN is not a call; the first two readings fail
    observer_options o;
    o.lease_name = "jobs";
    o.retry_period = 20ms;
    o.resync_period = 30s;
    observer obs{o, std::move(owned)};
    obs.start();
    const auto v = obs.wait_for_change(2s, 0);
    ASSERT_TRUE(v) << "not retried after retry_period";
    EXPECT_FALSE(v->stale);
    EXPECT_EQ(v->holder, "a");
}

} // namespace
} // namespace pglease::test
