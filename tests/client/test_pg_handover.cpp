/// @file test_pg_handover.cpp
/// @brief Planned handover against the real server: elector::yield_to() to
/// a campaigning successor (the old work ends before the successor starts,
/// the old epoch is refused), to an identity nobody runs (the lease waits
/// for its ttl), and stop() with preferred_successor; the successor
/// confirms the handover with a read, not a second durable commit.
#include "handover_timeline.hpp"
#include "pglease/internal/pqxx_compat.hpp"

#include <atomic>
#include <mutex>
#include <thread>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

class pg_handover : public pg_test {};

TEST_F(pg_handover, yield_to_hands_over_after_the_work_stopped_and_fences_the_old_epoch) {
    const auto name = unique_name("yield");
    const auto table = unique_name("yield_tbl");
    make_fenced_table(table, name);
    timeline ta;
    timeline tb;
    ta.table = table;
    tb.table = table;
    ta.wind_down = 200ms; // a successor that started early would overlap it
    elector a{handover_config(name, ta, unique_name("old"))};
    ta.self = &a;
    a.start();
    ASSERT_TRUE(eventually([&] { return a.leading() && ta.writes > 2; }, 5s));
    elector b{handover_config(name, tb, unique_name("new"))};
    tb.self = &b;
    b.start();
    ASSERT_TRUE(eventually([&] { return b.leader() == a.identity(); }, 5s));
    const auto old_epoch = a.epoch();

    const auto asked = steady::now();
    const handover_result r = a.yield_to(b.identity());
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(r.old_epoch, old_epoch);
    EXPECT_GT(r.new_epoch, old_epoch);
    EXPECT_FALSE(a.leading());
    EXPECT_EQ(ta.stopped, 1);
    ASSERT_TRUE(eventually([&] { return tb.started > 0; }, 5s));
    EXPECT_EQ(tb.epoch.load(), r.new_epoch); // the successor acquired the handed epoch
    const auto b_started = tb.at(&timeline::started_at);
    std::cout << "[ timing ] yield_to -> successor leads: "
              << std::chrono::duration_cast<std::chrono::microseconds>(b_started - asked).count()
              << " us; old work ended -> successor leads: "
              << std::chrono::duration_cast<std::chrono::microseconds>(
                     b_started - ta.at(&timeline::work_ended_at))
                     .count()
              << " us (retry period 1000 ms)\n";
    // No overlap: the old work ended, then on_stopped_leading, then the successor.
    EXPECT_LT(ta.at(&timeline::work_ended_at), b_started);
    EXPECT_LE(ta.at(&timeline::work_ended_at), ta.at(&timeline::stopped_at));
    EXPECT_LT(ta.at(&timeline::stopped_at), b_started);
    EXPECT_LT(b_started - asked, 1000ms) << "the successor waited for its timer, not the NOTIFY";
    EXPECT_EQ(a.last_handover().value().new_epoch, r.new_epoch);

    // The old epoch is refused by the fence: LS001 (a newer epoch was granted).
    std::string sqlstate = "none";
    try {
        pqxx::connection app{""};
        run_fenced(app, fence_token{name, old_epoch, {}}, [&](pqxx::work& tx) {
            pqxx_compat::exec0(tx,
                               "INSERT INTO " + tx.quote_name(table) + " (note) VALUES ('stale')");
        });
    } catch (const fence_rejected& e) {
        sqlstate = e.sqlstate();
    }
    EXPECT_EQ(sqlstate, "LS001");

    // The successor writes; every row of the old epoch came before any of the new.
    ASSERT_TRUE(eventually([&] { return tb.writes > 2; }, 5s));
    pqxx::nontransaction tx{admin()};
    const auto order = pqxx_compat::exec1(
        tx, "SELECT coalesce(max(id) FILTER (WHERE epoch = " + std::to_string(old_epoch) +
                "), 0) < min(id) FILTER (WHERE epoch = " + std::to_string(r.new_epoch) +
                "), count(DISTINCT epoch) FROM " + tx.quote_name(table));
    EXPECT_TRUE(order[0].as<bool>());
    EXPECT_EQ(order[1].as<int>(), 2);
    EXPECT_TRUE(eventually([&] { return a.leader() == b.identity(); }, 3s));
}

TEST_F(pg_handover, yield_to_an_identity_nobody_runs_leaves_the_lease_until_its_ttl) {
    const auto name = unique_name("ghost");
    timeline ta;
    elector a{handover_config(name, ta, unique_name("alive"))};
    a.start();
    ASSERT_TRUE(eventually([&] { return a.leading(); }, 5s));
    const auto old_epoch = a.epoch();

    const auto handed = steady::now();
    const handover_result r = a.yield_to("nobody-runs-this");
    ASSERT_TRUE(r.ok()) << r.message; // not checked: documented
    auto s = lease_status(name);
    EXPECT_EQ(s.holder, "nobody-runs-this");
    EXPECT_TRUE(s.valid);
    EXPECT_EQ(s.epoch, r.new_epoch);

    // Nobody renews it: it expires after its ttl (2 s), then the old leader,
    // still campaigning, takes it over with a new epoch.
    std::this_thread::sleep_for(1000ms);
    EXPECT_FALSE(a.leading()) << "the lease must sit with the successor until its ttl";
    // leading() turns true before the callback queue runs on_started_leading:
    // wait for the second term's callback too, or started_at is the first's.
    ASSERT_TRUE(eventually([&] { return a.leading() && ta.started.load() >= 2; }, 5s));
    const auto took = std::chrono::duration_cast<ms>(ta.at(&timeline::started_at) - handed);
    std::cout << "[ timing ] handover to a dead identity -> lease usable again: " << took.count()
              << " ms (ttl 2000 ms)\n";
    EXPECT_GE(took, 1900ms);
    EXPECT_GT(a.epoch(), r.new_epoch);
    EXPECT_GT(r.new_epoch, old_epoch);
}

TEST_F(pg_handover, yield_to_reports_what_it_did_when_there_is_nothing_to_hand_over) {
    const auto name = unique_name("noterm");
    timeline ta;
    timeline tb;
    elector a{handover_config(name, ta, unique_name("leader"))};
    a.start();
    ASSERT_TRUE(eventually([&] { return a.leading(); }, 5s));
    elector b{handover_config(name, tb, unique_name("follower"))};
    EXPECT_EQ(b.yield_to(a.identity()).what, handover_result::outcome::not_leading); // not started
    b.start();
    ASSERT_TRUE(eventually([&] { return b.leader() == a.identity(); }, 5s));
    const auto r = b.yield_to(a.identity());
    EXPECT_EQ(r.what, handover_result::outcome::not_leading);
    EXPECT_TRUE(a.leading());
    EXPECT_THROW((void)a.yield_to(a.identity()), config_error);
    EXPECT_THROW((void)a.yield_to(""), config_error);
    EXPECT_FALSE(b.last_handover().has_value());
}

TEST_F(pg_handover, stop_with_preferred_successor_hands_over_instead_of_releasing) {
    const auto name = unique_name("preferred");
    timeline ta;
    timeline tb;
    timeline tc;
    const auto id_b = unique_name("preferred_b");
    ta.wind_down = 200ms;
    auto cfg_a = handover_config(name, ta, unique_name("preferred_a"));
    cfg_a.preferred_successor = id_b;
    auto a = std::make_unique<elector>(cfg_a);
    a->start();
    ASSERT_TRUE(eventually([&] { return a->leading(); }, 5s));
    // Two followers: the preferred one must win, not whoever is quicker.
    elector c{handover_config(name, tc, unique_name("preferred_c"))};
    c.start();
    elector b{handover_config(name, tb, id_b)};
    b.start();
    ASSERT_TRUE(eventually([&] { return b.leader() == a->identity(); }, 5s));
    ASSERT_TRUE(eventually([&] { return c.leader() == a->identity(); }, 5s));

    const auto stopped = steady::now();
    a->stop();
    const auto result = a->last_handover();
    ASSERT_TRUE(result.has_value());
    EXPECT_TRUE(result->ok()) << result->message;
    EXPECT_EQ(result->successor, id_b);
    EXPECT_EQ(ta.stopped, 1);
    ASSERT_TRUE(eventually([&] { return tb.started > 0; }, 5s));
    EXPECT_LT(ta.at(&timeline::work_ended_at), tb.at(&timeline::started_at));
    EXPECT_LT(ta.at(&timeline::stopped_at), tb.at(&timeline::started_at));
    EXPECT_LT(tb.at(&timeline::started_at) - stopped, 1000ms);
    EXPECT_EQ(tb.epoch.load(), result->new_epoch);
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(tc.started, 0);
    EXPECT_TRUE(b.leading());
    a.reset();
}

// The successor is told of the handover by NOTIFY and confirms it with a
// read: the handover's commit is the only durable commit on the path. Had
// the successor acquired, the row's renewed_at would have moved past its
// acquired_at (an extend); with a 30 s ttl no renew comes for 10 s.
TEST_F(pg_handover, the_successor_confirms_the_handover_with_a_read_not_a_second_commit) {
    const auto name = unique_name("read_confirm");
    timeline ta;
    timeline tb;
    auto cfg_a = handover_config(name, ta, unique_name("read_a"));
    auto cfg_b = handover_config(name, tb, unique_name("read_b"));
    for (auto* c : {&cfg_a, &cfg_b}) {
        c->ttl = 30s;
        c->renew_deadline = 20s;
    }
    elector a{cfg_a};
    a.start();
    ASSERT_TRUE(eventually([&] { return a.leading(); }, 5s));
    elector b{cfg_b};
    b.start();
    ASSERT_TRUE(eventually([&] { return b.leader() == a.identity(); }, 5s));

    const auto asked = steady::now();
    const handover_result r = a.yield_to(b.identity());
    ASSERT_TRUE(r.ok()) << r.message;
    ASSERT_TRUE(eventually([&] { return tb.started > 0; }, 5s));
    EXPECT_EQ(tb.epoch.load(), r.new_epoch);
    EXPECT_LT(tb.at(&timeline::started_at) - asked, 1000ms)
        << "the successor waited for its timer, not the NOTIFY";

    pqxx::nontransaction tx{admin()};
    const auto row = pqxx_compat::exec1(
        tx, "SELECT holder, epoch, renewed_at = acquired_at, clock_timestamp() < expires_at "
            "FROM leases WHERE name = " +
                tx.quote(name));
    EXPECT_EQ(row[0].as<std::string>(), b.identity());
    EXPECT_EQ(row[1].as<std::int64_t>(), r.new_epoch);
    EXPECT_TRUE(row[2].as<bool>()) << "the successor wrote its grant again (an acquire)";
    EXPECT_TRUE(row[3].as<bool>());
    EXPECT_TRUE(b.leading());
}

} // namespace
} // namespace pglease::test
