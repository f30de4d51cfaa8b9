// Downstream fences (extension 1.4) against two real clusters, the lease
// store and a downstream database (tests/client/downstream.sh starts both
// and names them in PGLEASE_STORE and PGLEASE_DOWNSTREAM): the elector
// raises the lease's floor downstream before on_started_leading; the old
// leader's transaction in flight there is ended and its later writes are
// refused (LS001), while run_fenced() on a downstream connection works
// unchanged for the new leader; an unreachable downstream refuses the term
// and the lease is released; scoped_lease and a raise's arguments. The
// deadline bounds are in test_pg_downstream_bounds.cpp.
#include "downstream_fixture.hpp"
#include "pg_terminate.hpp"
#include "pglease/internal/pqxx_compat.hpp"

#include <pglease/pglease.hpp>
#include <pqxx/pqxx>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace {

using namespace downstream_test;

TEST(Downstream, ElectorRaisesTheFloorBeforeTheTermStarts) {
    const std::string lease = unique("ds_raise");
    std::atomic<std::int64_t> epoch{0}, floor_at_start{-1};
    auto cfg = config_for(lease, env("PGLEASE_DOWNSTREAM"));
    cfg.callbacks.on_started_leading = [&](std::int64_t e, const pglease::stop_token&) {
        floor_at_start = floor_of(lease); // what the downstream says as the work starts
        epoch = e;
    };
    cfg.callbacks.on_stopped_leading = [] {};
    pglease::elector el{cfg};
    el.start();
    ASSERT_TRUE(eventually([&] { return epoch.load() != 0; }, 10s));
    EXPECT_EQ(floor_at_start.load(), epoch.load());
    el.stop();
}

TEST(Downstream, PausedLeaderIsRefusedDownstreamOnceTheNewTermStarted) {
    const std::string lease = unique("ds_paused"), table = unique("ds_paused_t");
    make_downstream_table(table, lease);

    // The old leader: a 1 s grant, one write downstream, then a transaction
    // in flight there when it pauses.
    old_leader old{lease};
    ASSERT_TRUE(old.grant.acquire());
    const pglease::fence_token old_token = old.token();
    pqxx::connection old_conn{env("PGLEASE_DOWNSTREAM")};
    pglease::run_fenced(old_conn, old_token, [&](pqxx::work& tx) {
        tx.exec("INSERT INTO " + table + " VALUES (1, NULL)");
    });
    std::atomic<bool> in_flight_committed{false}, in_flight_open{false};
    std::thread paused{[&] {
        try {
            pqxx::connection c{env("PGLEASE_DOWNSTREAM")};
            pglease::run_fenced(c, old_token, [&](pqxx::work& tx) {
                tx.exec("INSERT INTO " + table + " VALUES (2, NULL)");
                in_flight_open = true;
                tx.exec("SELECT pg_sleep(8)"); // paused mid-transaction
            });
            in_flight_committed = true;
        } catch (const std::exception&) {
        }
    }};
    ASSERT_TRUE(eventually([&] { return in_flight_open.load(); }, 5s));
    std::this_thread::sleep_for(1200ms); // the old grant expires meanwhile

    // The new leader: its term starts only after the floor was raised,
    // which waits for the transaction in flight (takeover_timeout), then ends it.
    std::atomic<std::int64_t> new_epoch{0};
    auto cfg = config_for(lease, env("PGLEASE_DOWNSTREAM"));
    cfg.callbacks.on_started_leading = [&](std::int64_t e, const pglease::stop_token&) {
        new_epoch = e;
    };
    cfg.callbacks.on_stopped_leading = [] {};
    pglease::elector el{cfg};
    el.start();
    ASSERT_TRUE(eventually([&] { return new_epoch.load() != 0; }, 15s));
    paused.join();
    EXPECT_FALSE(in_flight_committed.load());

    // The old leader wakes up and writes: refused downstream.
    try {
        pglease::run_fenced(old_conn, old_token, [&](pqxx::work& tx) {
            tx.exec("INSERT INTO " + table + " VALUES (3, NULL)");
        });
        ADD_FAILURE() << "the paused leader's write passed the downstream fence";
    } catch (const pglease::fence_rejected& e) {
        EXPECT_TRUE(e.stale_epoch()) << e.what();
    }
    // run_fenced works unchanged for the new leader against the downstream.
    pqxx::connection new_conn{env("PGLEASE_DOWNSTREAM")};
    pglease::run_fenced(
        new_conn, pglease::fence_token{lease, new_epoch.load(), {}},
        [&](pqxx::work& tx) { tx.exec("INSERT INTO " + table + " VALUES (4, NULL)"); });
    pqxx::nontransaction look{new_conn};
    EXPECT_EQ(look.exec("SELECT string_agg(id::text, ',' ORDER BY id) FROM " + table)[0][0]
                  .as<std::string>(),
              "1,4");
    el.stop();
}

TEST(Downstream, AnUnreachableDownstreamRefusesTheTermAndReleases) {
    const std::string lease = unique("ds_unreachable");
    std::mutex m;
    std::condition_variable cv;
    std::int64_t refused_epoch = 0;
    std::string why;
    std::atomic<int> started{0};
    auto cfg = config_for(lease, "host=127.0.0.1 port=1 connect_timeout=2");
    cfg.callbacks.on_started_leading = [&](std::int64_t, const pglease::stop_token&) { ++started; };
    cfg.callbacks.on_stopped_leading = [] {};
    cfg.callbacks.on_term_refused = [&](std::int64_t e, const std::string& w) {
        const std::lock_guard lock{m};
        if (refused_epoch == 0) {
            refused_epoch = e;
            why = w;
        }
        cv.notify_all();
    };
    pglease::elector el{cfg};
    const auto t0 = std::chrono::steady_clock::now();
    el.start();
    {
        std::unique_lock lock{m};
        ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return refused_epoch != 0; }));
    }
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(took, 4s) << "bounded by the grant's local deadline (ttl 4 s)";
    EXPECT_NE(why.find("downstream 1 of 1"), std::string::npos) << why;
    EXPECT_EQ(started.load(), 0);
    // The grant was released at once, not left to expire.
    pqxx::connection c{env("PGLEASE_STORE")};
    pqxx::nontransaction tx{c};
    EXPECT_EQ(pglease::pqxx_compat::exec_params(
                  tx,
                  "SELECT count(*) FROM lease_events WHERE name = $1 AND epoch = $2 "
                  "AND event = 'released'",
                  lease, refused_epoch)[0][0]
                  .as<int>(),
              1);
    // It campaigns again every retry period (300 ms), not at every NOTIFY
    // of its own release: over 1.5 s, a handful of grants, not thousands.
    std::this_thread::sleep_for(1500ms);
    el.stop();
    EXPECT_EQ(started.load(), 0);
    const int grants =
        pglease::pqxx_compat::exec_params(tx,
                                          "SELECT count(*) FROM lease_events WHERE name = $1 AND "
                                          "event = 'acquired'",
                                          lease)[0][0]
            .as<int>();
    EXPECT_GE(grants, 2);
    EXPECT_LE(grants, 10);
}

TEST(Downstream, ScopedLeaseIsHeldOnlyOnceTheFloorIsRaised) {
    const std::string lease = unique("ds_scoped");
    pglease::connection_options store_opts, down, unreachable;
    store_opts.conninfo = env("PGLEASE_STORE");
    down.conninfo = env("PGLEASE_DOWNSTREAM");
    unreachable.conninfo = "host=127.0.0.1 port=1 connect_timeout=2";
    pglease::lease_options o;
    o.ttl = 4s;
    std::int64_t first_epoch = 0;
    {
        pglease::scoped_lease guard{lease, o, 0ms, store_opts, {down}};
        ASSERT_TRUE(guard.held()) << guard.refusal();
        EXPECT_EQ(floor_of(lease), guard.epoch());
        first_epoch = guard.epoch();
    }
    pglease::scoped_lease refused{lease, o, 0ms, store_opts, {down, unreachable}};
    EXPECT_FALSE(refused.held());
    EXPECT_NE(refused.refusal().find("downstream 2 of 2"), std::string::npos) << refused.refusal();
    pqxx::connection c{env("PGLEASE_STORE")};
    pqxx::nontransaction tx{c};
    const auto r = pglease::pqxx_compat::exec_params(
        tx,
        "SELECT coalesce(holder, ''), (SELECT count(*) FROM lease_events "
        "e WHERE e.name = l.name AND e.event = 'released' AND e.epoch "
        "> $2) FROM leases l WHERE name = $1",
        lease, first_epoch);
    ASSERT_EQ(r.size(), 1U);
    EXPECT_EQ(r[0][0].as<std::string>(), "") << "the refused grant is still held";
    EXPECT_EQ(r[0][1].as<int>(), 1) << "the refused grant was not released";
}

TEST(Downstream, ARaiseSendsItsArgumentsQuotedAndReportsAHigherFloor) {
    pglease::connection_options o;
    o.conninfo = env("PGLEASE_DOWNSTREAM");
    pglease::pq_backend down{o};
    const std::string lease = unique("ds_it's_a \\ name");
    const auto far = std::chrono::steady_clock::now() + 10s;
    EXPECT_TRUE(down.raise(store_id(), lease, 5, far));
    EXPECT_EQ(floor_of(lease), 5);
    EXPECT_TRUE(down.raise(store_id(), lease, 5, far));  // already there
    EXPECT_FALSE(down.raise(store_id(), lease, 4, far)); // already higher: unchanged
    EXPECT_EQ(floor_of(lease), 5);
    EXPECT_THROW((void)down.raise(store_id(), lease, 0, far), pglease::error); // 22023
    EXPECT_TRUE(down.raise(store_id(), lease, 6, far)); // the session survived the error
    EXPECT_EQ(floor_of(lease), 6);
}

TEST(Downstream, ARaiseReopensAConnectionThatDiedWhileIdle) {
    pglease::connection_options o;
    o.conninfo = env("PGLEASE_DOWNSTREAM");
    pglease::pq_backend down{o};
    const std::string lease = unique("ds_reopen");
    const auto far = std::chrono::steady_clock::now() + 10s;
    ASSERT_TRUE(down.raise(store_id(), lease, 5, far));
    const int pid = down.server_pid();
    {
        pqxx::connection c{env("PGLEASE_DOWNSTREAM")};
        pglease::test::terminate_backend(c, pid);
    }
    // The next term's raise finds the session dead and raises on a new one.
    EXPECT_TRUE(down.raise(store_id(), lease, 6, far));
    EXPECT_NE(down.server_pid(), pid);
    EXPECT_EQ(floor_of(lease), 6);
}

} // namespace
