/// @file test_pg_handover_request.cpp
/// @brief Rolling deploys between electors against the real server: a new
/// elector with request_handover is handed the lease by the holder after the old
/// work stopped, its fenced rows after the old ones (and never hands it
/// back); a holder that does not answer
/// keeps it; a request from a role that may not ask is ignored, one from
/// the holder's own role is served.
#include "handover_timeline.hpp"
#include "pglease/internal/pqxx_compat.hpp"

#include <atomic>
#include <mutex>
#include <thread>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;

class pg_handover_request : public pg_test {
protected:
    /// Sends a handover request for @p lease to @p requester from @p conn.
    static void ask(pqxx::connection& conn, const std::string& lease,
                    const std::string& requester) {
        pqxx::nontransaction tx{conn};
        pqxx_compat::exec_params(
            tx,
            "SELECT pg_notify('pg_lease_handover', json_build_object('lease', $1::text, "
            "'requester', $2::text)::text)",
            lease, requester);
    }
};

TEST_F(pg_handover_request, a_new_elector_is_handed_the_lease_after_the_old_work_stopped) {
    const auto name = unique_name("takeover");
    const auto table = unique_name("takeover_tbl");
    make_fenced_table(table, name);
    timeline ta;
    timeline tb;
    ta.table = table; // fenced writes until the stop token fires
    tb.table = table;
    ta.wind_down = 200ms; // a successor that started early would overlap it
    auto cfg_a = handover_config(name, ta, unique_name("old"));
    cfg_a.request_handover = true; // as the new one: it led first, so it never asks
    elector a{cfg_a};
    ta.self = &a;
    a.start();
    ASSERT_TRUE(eventually([&] { return a.leading() && ta.writes > 2; }, 5s));
    const auto old_epoch = a.epoch();

    auto cfg_b = handover_config(name, tb, unique_name("new"));
    cfg_b.request_handover = true;
    elector b{cfg_b};
    tb.self = &b;
    b.start();
    ASSERT_TRUE(eventually([&] { return tb.started > 0; }, 10s));
    // The old elector records the outcome once lease_handover has returned,
    // which may be after the successor, woken by the commit, has started.
    ASSERT_TRUE(eventually([&] { return a.last_handover().has_value(); }, 5s));
    const auto handed = a.last_handover();
    ASSERT_TRUE(handed.has_value());
    EXPECT_TRUE(handed->ok()) << handed->message;
    EXPECT_EQ(handed->successor, b.identity());
    EXPECT_EQ(handed->old_epoch, old_epoch);
    EXPECT_EQ(tb.epoch.load(), handed->new_epoch); // b acquired the handed epoch
    EXPECT_EQ(ta.stopped, 1);
    EXPECT_LT(ta.at(&timeline::work_ended_at), tb.at(&timeline::started_at));
    EXPECT_EQ(lease_status(name).holder, b.identity());
    // Every row of the old epoch came before any of the new one.
    ASSERT_TRUE(eventually([&] { return tb.writes > 2; }, 5s));
    pqxx::nontransaction tx{admin()};
    const auto order = pqxx_compat::exec_params1(
        tx,
        "SELECT max(id) FILTER (WHERE epoch = $1) < min(id) FILTER (WHERE epoch = $2) FROM " +
            tx.quote_name(table),
        old_epoch, handed->new_epoch);
    EXPECT_TRUE(order[0].as<bool>());

    // a, a follower now, does not ask back: b keeps the same term.
    std::this_thread::sleep_for(2500ms); // more than two retry periods
    EXPECT_TRUE(b.leading());
    EXPECT_EQ(b.epoch(), handed->new_epoch);
    EXPECT_EQ(tb.started, 1);
    EXPECT_EQ(ta.started, 1);
}

TEST_F(pg_handover_request, a_holder_that_does_not_answer_keeps_the_lease) {
    const auto name = unique_name("takeover_no");
    timeline ta;
    timeline tb;
    auto cfg_a = handover_config(name, ta, unique_name("old"));
    cfg_a.answer_handover_requests = false;
    elector a{cfg_a};
    a.start();
    ASSERT_TRUE(eventually([&] { return a.leading(); }, 5s));
    auto cfg_b = handover_config(name, tb, unique_name("new"));
    cfg_b.request_handover = true;
    elector b{cfg_b};
    b.start();
    ASSERT_TRUE(eventually([&] { return b.leader() == a.identity(); }, 5s));
    std::this_thread::sleep_for(2500ms); // b asks at 0 and 1 s
    EXPECT_TRUE(a.leading());
    EXPECT_FALSE(a.last_handover().has_value());
    EXPECT_EQ(tb.started, 0);
}

TEST_F(pg_handover_request, only_the_holders_role_or_a_superuser_may_ask) {
    const auto name = unique_name("takeover_role");
    const auto role = unique_name("mallory");
    {
        pqxx::nontransaction tx{admin()};
        tx.exec("CREATE ROLE " + tx.quote_name(role) + " LOGIN");
    }
    timeline ta;
    auto cfg = handover_config(name, ta, unique_name("old"));
    const std::string app = unique_name("takeover_role_app");
    cfg.connection = env_options(app);
    elector a{cfg};
    a.start();
    ASSERT_TRUE(eventually([&] { return a.leading(); }, 5s));
    // Its listener session is up (it LISTENs right after connecting).
    ASSERT_TRUE(eventually(
        [&] {
            pqxx::nontransaction tx{admin()};
            return pqxx_compat::exec_params1(tx,
                                             "SELECT count(*) FROM pg_stat_activity WHERE "
                                             "application_name = $1",
                                             app)[0]
                       .as<int>() == 2;
        },
        5s));
    std::this_thread::sleep_for(200ms);

    // Another role: ignored (its session stays open, as a requester's does).
    pqxx::connection other{"user=" + role};
    ask(other, name, "mallory-1");
    std::this_thread::sleep_for(1500ms);
    EXPECT_TRUE(a.leading());
    EXPECT_FALSE(a.last_handover().has_value());

    // The holder's own role (here a superuser): served, even for an
    // identity nobody runs (it then holds the lease until its ttl).
    ask(admin(), name, "successor-1");
    ASSERT_TRUE(eventually([&] { return a.last_handover().has_value(); }, 5s));
    EXPECT_TRUE(a.last_handover()->ok()) << a.last_handover()->message;
    EXPECT_EQ(lease_status(name).holder, "successor-1");
    EXPECT_FALSE(a.leading());
    EXPECT_EQ(ta.stopped, 1);
}

} // namespace
} // namespace pglease::test
