/// @file test_pg_elector.cpp
/// @brief The elector against the real server: failover when the leader's
/// process dies, a paused (SIGSTOPped) leader, a killed renew session,
/// hand-over on stop, step-down on a fence rejection, and a stopping
/// leader's wind-down writes passing (released only after its work returned).
#include "pg_fixture.hpp"
#include "pglease/elector.hpp"
#include "pglease/error.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <csignal>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

/// Callback state shared with an elector.
struct observer {
    std::mutex mutex;
    std::condition_variable cv;
    std::atomic<int> started{0};
    std::atomic<int> stopped{0};
    std::atomic<std::int64_t> epoch{0};
    steady::time_point started_at{};
    std::string last_leader;

    elector_callbacks callbacks() {
        elector_callbacks c;
        c.on_started_leading = [this](std::int64_t e, const stop_token&) {
            {
                const std::lock_guard lock{mutex};
                started_at = steady::now();
                epoch = e;
                ++started;
            }
            cv.notify_all();
        };
        c.on_stopped_leading = [this] {
            ++stopped;
            cv.notify_all();
        };
        c.on_new_leader = [this](const std::string& id) {
            {
                const std::lock_guard lock{mutex};
                last_leader = id;
            }
            cv.notify_all();
        };
        return c;
    }

    std::string leader() {
        const std::lock_guard lock{mutex};
        return last_leader;
    }
};

/// ttl 2 s, renew deadline 1.5 s, retry 300 ms (x1.2), margin 200 ms.
elector_config short_config(const std::string& lease, observer& o, const std::string& app) {
    elector_config c;
    c.lease_name = lease;
    c.ttl = 2000ms;
    c.renew_deadline = 1500ms;
    c.retry_period = 300ms;
    c.connection = env_options(app);
    c.callbacks = o.callbacks();
    return c;
}

class pg_elector : public pg_test {};

TEST_F(pg_elector, follower_takes_over_within_ttl_plus_retry_when_the_leader_dies) {
    const auto name = unique_name("failover");
    child_process leader{[&](const auto& say, int) {
        observer o;
        elector e{short_config(name, o, "failover-leader")};
        e.start();
        while (o.started == 0)
            std::this_thread::sleep_for(10ms);
        say("leading " + std::to_string(o.epoch.load()) + " " + e.identity());
        while (e.leading() || o.stopped == 0)
            std::this_thread::sleep_for(1s); // renewing until SIGKILL
        return 1;
    }};
    const auto line = leader.read_line(10s);
    ASSERT_TRUE(line && line->rfind("leading ", 0) == 0) << line.value_or("(nothing)");
    const auto old_epoch = std::stoll(line->substr(8));

    observer o;
    elector follower{short_config(name, o, "failover-follower")};
    follower.start();
    ASSERT_TRUE(eventually([&] { return !o.leader().empty(); }, 5s));
    EXPECT_NE(o.leader(), follower.identity());
    std::this_thread::sleep_for(1s);
    EXPECT_FALSE(follower.leading()); // the live leader keeps renewing

    const auto killed = steady::now();
    leader.signal(SIGKILL);
    (void)leader.wait();
    ASSERT_TRUE(eventually([&] { return o.started > 0; }, 6s));
    const auto took = std::chrono::duration_cast<ms>(o.started_at - killed);
    std::cout << "[ timing ] leader killed -> follower leads: " << took.count()
              << " ms (ttl 2000 ms, retry 300 ms)\n";
    EXPECT_LE(took, 2000ms + 360ms + 300ms); // ttl + retry x jitter + slack
    EXPECT_GT(o.epoch.load(), old_epoch);
    EXPECT_TRUE(follower.leading());
}

TEST_F(pg_elector, paused_leader_is_fenced_and_steps_down_after_sigcont) {
    const auto name = unique_name("paused");
    const auto table = unique_name("paused_tbl");
    make_fenced_table(table, name);

    child_process leader{[&](const auto& say, int from_parent) {
        observer o;
        elector e{short_config(name, o, "paused-leader")};
        e.start();
        pqxx::connection app{""};
        const std::string insert =
            "INSERT INTO " + app.quote_name(table) + " (note) VALUES ('old leader')";
        while (o.started == 0)
            std::this_thread::sleep_for(10ms);
        const auto epoch = o.epoch.load();
        e.run_fenced(app, [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert); });
        say("leading " + std::to_string(epoch));

        char b = 0;
        [[maybe_unused]] const auto n = ::read(from_parent, &b, 1); // SIGSTOP lands here
        // Continued: before doing anything, does it still believe it leads?
        const bool still_leading = e.leading();
        std::string local = "none";
        try {
            e.run_fenced(app, [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert); });
        } catch (const lease_lost&) {
            local = "lease_lost";
        }
        std::string server = "none";
        try {
            run_fenced(app, fence_token{name, epoch, {}},
                       [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert); });
        } catch (const fence_rejected& ex) {
            server = ex.sqlstate();
        }
        const auto until = steady::now() + 5s;
        while (o.stopped == 0 && steady::now() < until)
            std::this_thread::sleep_for(10ms);
        say("after leading=" + std::to_string(still_leading) + " local=" + local +
            " server=" + server + " stopped=" + std::to_string(o.stopped.load()));
        return 0;
    }};
    const auto line = leader.read_line(10s);
    ASSERT_TRUE(line && line->rfind("leading ", 0) == 0) << line.value_or("(nothing)");
    const auto old_epoch = std::stoll(line->substr(8));

    leader.signal(SIGSTOP);
    std::this_thread::sleep_for(2500ms); // > ttl: the grant expires on the server

    observer o;
    elector follower{short_config(name, o, "paused-follower")};
    follower.start();
    ASSERT_TRUE(eventually([&] { return o.started > 0; }, 5s));
    EXPECT_GT(o.epoch.load(), old_epoch);

    leader.poke();
    leader.signal(SIGCONT);
    const auto report = leader.read_line(10s);
    ASSERT_TRUE(report) << "child said nothing";
    EXPECT_EQ(*report, "after leading=0 local=lease_lost server=LS001 stopped=1");
    EXPECT_EQ(leader.wait(), 0);
    EXPECT_TRUE(follower.leading());

    pqxx::nontransaction tx{admin()};
    const auto rows = tx.exec("SELECT epoch FROM " + tx.quote_name(table));
    ASSERT_EQ(rows.size(), 1U); // only the write made while it really led
    EXPECT_EQ(rows[0][0].as<std::int64_t>(), old_epoch);
}

TEST_F(pg_elector, terminated_renew_session_reconnects_or_steps_down_never_two_leaders) {
    const auto name = unique_name("terminate");
    const auto app_a = unique_name("term_a");
    observer oa;
    observer ob;
    elector a{short_config(name, oa, app_a)};
    a.start();
    ASSERT_TRUE(eventually([&] { return a.leading(); }, 5s));
    elector b{short_config(name, ob, unique_name("term_b"))};
    b.start();
    ASSERT_TRUE(eventually([&] { return !ob.leader().empty(); }, 5s));
    const auto epoch = a.epoch();

    for (int round = 0; round < 3; ++round) {
        // A reconnect may still be under way on a loaded machine: wait for it.
        ASSERT_TRUE(eventually([&] { return terminate(app_a) >= 1; }, 5s))
            << "renew session of the leader not found";
        const auto until = steady::now() + 1500ms;
        while (steady::now() < until) {
            ASSERT_FALSE(a.leading() && b.leading()) << "two leaders";
            std::this_thread::sleep_for(2ms);
        }
    }
    // Which lawful outcome came is what a says: a step-down is announced
    // (and a may lead again later, even at the same epoch if its grant was
    // still valid on the server); no step-down means it kept its term.
    const bool kept_term = oa.stopped == 0;
    std::cout << "[ info ] after 3 terminations the leader "
              << (kept_term ? "reconnected and kept its epoch" : "stepped down") << "\n";
    if (kept_term) {
        // It reconnected and renewed the very same epoch in time.
        EXPECT_TRUE(a.leading());
        EXPECT_EQ(a.epoch(), epoch);
        EXPECT_EQ(lease_status(name).epoch, epoch);
        EXPECT_TRUE(eventually(
            [&] {
                pqxx::nontransaction tx{admin()};
                return pqxx_compat::exec_params1(tx,
                                                 "SELECT count(*) FROM pg_stat_activity "
                                                 "WHERE application_name = $1",
                                                 app_a)[0]
                           .as<int>() == 1;
            },
            2s))
            << "no new session after the reconnect";
    } else {
        // It stepped down (and said so); the loop saw at most one leader,
        // and the lease's epoch never went back.
        EXPECT_GE(oa.stopped, 1);
        EXPECT_GE(lease_status(name).epoch, epoch);
    }
}

TEST_F(pg_elector, stop_releases_and_a_follower_leads_at_once) {
    const auto name = unique_name("handover");
    observer oa;
    observer ob;
    auto cfg_a = short_config(name, oa, "handover-a");
    cfg_a.ttl = 6000ms;
    cfg_a.renew_deadline = 4000ms;
    cfg_a.retry_period = 3000ms; // the follower's timer is >= 3 s
    auto cfg_b = cfg_a;
    cfg_b.identity = default_identity();
    cfg_b.callbacks = ob.callbacks();
    auto a = std::make_unique<elector>(cfg_a);
    a->start();
    ASSERT_TRUE(eventually([&] { return a->leading(); }, 5s));
    elector b{cfg_b};
    b.start();
    ASSERT_TRUE(eventually([&] { return !ob.leader().empty(); }, 5s));
    std::this_thread::sleep_for(200ms);

    const auto stopped = steady::now();
    a.reset(); // stop(): release, on_stopped_leading, join
    EXPECT_EQ(oa.stopped, 1);
    ASSERT_TRUE(eventually([&] { return ob.started > 0; }, 5s));
    const auto took = std::chrono::duration_cast<ms>(ob.started_at - stopped);
    std::cout << "[ timing ] leader stop (release) -> follower leads: " << took.count()
              << " ms (retry period 3000 ms)\n";
    EXPECT_LT(took, 2000ms) << "the follower waited for its timer, not the NOTIFY";
}

TEST_F(pg_elector, stop_releases_only_after_the_leader_work_returned) {
    const auto name = unique_name("winding");
    const auto table = unique_name("winding_tbl");
    make_fenced_table(table, name);
    std::atomic<std::int64_t> epoch{0};
    std::atomic<bool> returned{false};
    std::string outcome = "not run"; // of the work's last write; read after stop()
    std::string holder_at_return;
    observer o;
    auto cfg = short_config(name, o, "winding-leader");
    cfg.callbacks.on_started_leading = [&](std::int64_t e, const stop_token& stop) {
        epoch = e;
        pqxx::connection app{""};
        stop.wait();
        // Winding down: the last write of the term, after the stop was asked
        // for. The lease is still this term's until the work returns.
        std::this_thread::sleep_for(300ms);
        try {
            run_fenced(app, fence_token{name, e, {}}, [&](pqxx::work& tx) {
                pqxx_compat::exec0(tx, "INSERT INTO " + tx.quote_name(table) +
                                           " (note) VALUES ('last')");
            });
            outcome = "committed";
        } catch (const std::exception& ex) {
            outcome = ex.what();
        }
        pqxx::nontransaction q{app};
        holder_at_return =
            pqxx_compat::exec_params1(q, "SELECT coalesce(holder, '') FROM leases WHERE name = $1",
                                      name)[0]
                .as<std::string>();
        returned = true;
    };
    auto e = std::make_unique<elector>(cfg);
    e->start();
    ASSERT_TRUE(eventually([&] { return epoch.load() != 0; }, 5s));
    const std::string identity = e->identity();
    e->stop();
    ASSERT_TRUE(returned.load());
    EXPECT_EQ(outcome, "committed") << "the wind-down write was refused: released too early";
    EXPECT_EQ(holder_at_return, identity);
    EXPECT_EQ(lease_status(name).holder, ""); // released once the work returned
}

TEST_F(pg_elector, fence_rejection_ends_the_term_at_once) {
    const auto name = unique_name("revoked");
    const auto table = unique_name("revoked_tbl");
    make_fenced_table(table, name);
    observer o;
    auto cfg = short_config(name, o, "revoked-leader");
    cfg.connection.listen = false; // learn of the revoke from the fence only
    elector e{cfg};
    e.start();
    ASSERT_TRUE(eventually([&] { return e.leading(); }, 5s));
    pqxx::connection app{""};
    const std::string insert = "INSERT INTO " + app.quote_name(table) + " (note) VALUES ('x')";
    e.run_fenced(app, [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert); });
    const std::int64_t revoked_epoch = e.epoch();

    {
        pqxx::nontransaction tx{admin()};
        pqxx_compat::exec_params(tx, "SELECT lease_revoke($1)", name);
    }
    const auto at = steady::now();
    try {
        e.run_fenced(app, [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert); });
        ADD_FAILURE() << "write after revoke accepted";
    } catch (const lease_lost& ex) {
        // Normally the server's LS002; if the renew thread noticed first, the
        // local check refuses it before any I/O. Either way: lease_lost.
        std::cout << "[ info ] refused with: "
                  << (ex.sqlstate().empty() ? "local check" : ex.sqlstate()) << "\n";
    }
    // The revoked term is over; the elector may already lead again (the
    // lease was free, and it campaigns at once), but only with a new grant.
    EXPECT_TRUE(!e.leading() || e.epoch() > revoked_epoch)
        << "still leading on the revoked grant (epoch " << revoked_epoch << ")";
    ASSERT_TRUE(eventually([&] { return o.stopped > 0; }, 1s));
    std::cout << "[ timing ] fence rejection -> on_stopped_leading: "
              << std::chrono::duration_cast<ms>(steady::now() - at).count() << " ms\n";
}

TEST_F(pg_elector, a_rejection_of_the_one_round_trip_form_ends_the_term_at_once) {
    const auto name = unique_name("fast_rejected");
    const auto table = unique_name("fast_rejected_tbl");
    make_fenced_table(table, name);
    observer o;
    auto cfg = short_config(name, o, "fast-rejected-leader");
    cfg.ttl = 30s; // no renewal within the test: only the fence can tell
    cfg.renew_deadline = 20s;
    cfg.retry_period = 2s;
    cfg.connection.listen = false;
    elector e{cfg};
    e.start();
    ASSERT_TRUE(eventually([&] { return e.leading(); }, 5s));
    pqxx::connection app{""};
    const std::string insert = "INSERT INTO " + app.quote_name(table) + " (note) VALUES ('x')";
    e.run_fenced(app, [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert); });
    {
        pqxx::nontransaction tx{admin()};
        pqxx_compat::exec_params(tx, "SELECT lease_revoke($1)", name);
        pqxx_compat::exec_params(tx, "SELECT lease_acquire($1, 'usurper', '1 min')", name);
    }
    try {
        e.run_fenced(app, [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert); });
        ADD_FAILURE() << "write of a stale leader accepted";
    } catch (const fence_rejected& ex) {
        EXPECT_EQ(ex.sqlstate(), "LS001");
    }
    EXPECT_FALSE(e.leading());
    EXPECT_TRUE(eventually([&] { return o.stopped > 0; }, 2s));
    pqxx::nontransaction check{admin()};
    EXPECT_EQ(
        pqxx_compat::exec1(check, "SELECT count(*) FROM " + check.quote_name(table))[0].as<long>(),
        1);
}

} // namespace
} // namespace pglease::test
