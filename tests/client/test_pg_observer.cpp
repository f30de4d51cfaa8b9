/// @file test_pg_observer.cpp
/// @brief pglease::observer against the real server: acquire, renew (no
/// change, expiry moves), release, revoke, takeover after expiry, handover,
/// and a terminated session (re-read and re-LISTEN after reconnect).
#include "pg_fixture.hpp"
#include "pglease/lease.hpp"
#include "pglease/observer.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

class pg_observer : public pg_test {
protected:
    void SetUp() override {
        pg_test::SetUp();
        name = unique_name("observe");
    }

    /// An observer that only notifications and the known expiry wake.
    std::unique_ptr<observer> follow() {
        observer_options o;
        o.lease_name = name;
        o.connection = env_options(app);
        o.resync_period = 60s;
        o.retry_period = 100ms;
        auto obs = std::make_unique<observer>(o);
        obs->start();
        EXPECT_TRUE(eventually([&] { return obs->current().read_at != clock::time_point{}; }, 5s));
        return obs;
    }

    /// The next change, expected within @p within (fails the test if not).
    lease_view next_change(observer& obs, std::uint64_t since,
                           std::chrono::milliseconds within = 3000ms) {
        const auto v = obs.wait_for_change(within, since);
        EXPECT_TRUE(v) << "no change within " << within.count() << " ms";
        return v ? *v : lease_view{};
    }

    std::string name;
    std::string app = unique_name("observer");
};

TEST_F(pg_observer, sees_acquire_renew_release) {
    auto obs = follow();
    pq_backend db{env_options()};
    lease_options o;
    o.identity = "a";
    o.ttl = 3000ms;
    lease a{db, name, o};
    // Nothing but the notification can wake the observer before its 60 s
    // resync (it knows no expiry yet): the generous bound still tells.
    ASSERT_TRUE(a.acquire());
    lease_view v = next_change(*obs, 0);
    EXPECT_TRUE(v.valid);
    EXPECT_EQ(v.holder, "a");
    EXPECT_EQ(v.epoch, a.epoch());
    ASSERT_TRUE(v.expires);
    const auto first_expiry = *v.expires;

    // Renewals send no notification and are no change; at the old expiry
    // the observer reads again and learns the new one (1.5 s later), well
    // before that one comes.
    std::this_thread::sleep_for(1500ms);
    ASSERT_TRUE(a.renew());
    EXPECT_TRUE(eventually(
        [&] {
            const auto now = obs->current();
            return now.expires && *now.expires > first_expiry + 1000ms;
        },
        2500ms))
        << "the observer did not read again at the old expiry";
    v = obs->current();
    EXPECT_TRUE(v.valid);
    EXPECT_EQ(v.version, 1U);

    ASSERT_TRUE(a.release());
    v = next_change(*obs, 1);
    EXPECT_FALSE(v.valid);
    EXPECT_EQ(v.holder, "");
    EXPECT_EQ(v.version, 2U);
}

TEST_F(pg_observer, sees_revoke_takeover_after_expiry_and_handover) {
    auto obs = follow();
    pq_backend db{env_options()};
    lease_options o;
    o.identity = "a";
    o.ttl = 10000ms;
    lease a{db, name, o};
    ASSERT_TRUE(a.acquire());
    (void)next_change(*obs, 0);
    {
        pqxx::nontransaction revoke{admin()};
        pqxx_compat::exec_params1(revoke, "SELECT lease_revoke($1)", name);
    }
    lease_view v = next_change(*obs, 1);
    EXPECT_EQ(v.holder, "");
    EXPECT_FALSE(v.valid);

    // A short grant that is never renewed: reported expired at its expiry.
    o.ttl = 400ms;
    lease b{db, name, o};
    ASSERT_TRUE(b.acquire());
    (void)next_change(*obs, 2);
    const auto granted = steady::now();
    v = next_change(*obs, 3);
    EXPECT_FALSE(v.valid);
    EXPECT_EQ(v.holder, "a"); // an expired grant keeps its holder
    EXPECT_GE(steady::now() - granted, 300ms);

    // Takeover of the expired lease by another holder.
    lease_options oc;
    oc.identity = "c";
    oc.ttl = 10000ms;
    lease c{db, name, oc};
    ASSERT_TRUE(c.acquire());
    v = next_change(*obs, 4);
    EXPECT_EQ(v.holder, "c");
    EXPECT_GT(v.epoch, b.epoch());

    // Handover to a chosen successor: a new epoch, event "handover".
    pqxx::nontransaction tx{admin()};
    const auto successor =
        pqxx_compat::exec_params1(tx, "SELECT lease_handover($1, 'c', $2, 'd')", name, c.epoch())[0]
            .as<std::int64_t>();
    v = next_change(*obs, 5);
    EXPECT_EQ(v.holder, "d");
    EXPECT_EQ(v.epoch, successor);
    EXPECT_TRUE(v.valid);
}

TEST_F(pg_observer, rereads_and_listens_again_after_its_session_is_terminated) {
    auto obs = follow();
    ASSERT_GE(terminate(app), 1);
    // The broken session ends the wait: the observer reconnects (after its
    // retry period at most), reads, and LISTENs again, so the next grant is
    // seen by notification, not by the 60 s resync.
    std::this_thread::sleep_for(300ms);
    pq_backend db{env_options()};
    lease_options o;
    o.identity = "after";
    o.ttl = 10000ms;
    lease l{db, name, o};
    ASSERT_TRUE(l.acquire());
    const lease_view v = next_change(*obs, 0);
    EXPECT_EQ(v.holder, "after");
    EXPECT_FALSE(v.stale);
}

} // namespace
} // namespace pglease::test
