/// @file test_pg_lease.cpp
/// @brief lease, scoped_lease and fenced transactions against the real
/// server of the PG* environment.
#include "forwarding_backend.hpp"
#include "pg_fixture.hpp"
#include "pg_terminate.hpp"
#include "pglease/error.hpp"
#include "pglease/lease.hpp"
#include "pglease/pq_backend.hpp"
#include "pglease/scoped_lease.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <atomic>
#include <future>
#include <thread>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

lease_options with_ttl(std::chrono::milliseconds ttl) {
    lease_options o;
    o.ttl = ttl;
    return o;
}

class pg_lease : public pg_test {};

TEST_F(pg_lease, acquire_held_renew_release_round_trip) {
    const auto name = unique_name("round_trip");
    pq_backend db{env_options()};
    lease l{db, name, with_ttl(3s)};
    EXPECT_FALSE(l.held());

    ASSERT_TRUE(l.acquire());
    EXPECT_TRUE(l.held());
    const auto epoch = l.epoch();
    EXPECT_GT(epoch, 0);
    EXPECT_EQ(l.holder(), l.identity());
    auto s = lease_status(name);
    EXPECT_EQ(s.holder, l.identity());
    EXPECT_EQ(s.epoch, epoch);
    EXPECT_TRUE(s.valid);

    const auto before = l.deadline();
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(l.renew());
    EXPECT_EQ(l.epoch(), epoch);
    EXPECT_GT(l.deadline(), before);

    ASSERT_TRUE(l.acquire()); // same holder: extended, same epoch
    EXPECT_EQ(l.epoch(), epoch);

    const auto rec = db.status(name);
    ASSERT_TRUE(rec);
    EXPECT_TRUE(rec->valid);
    EXPECT_GT(rec->remaining, 2s);

    EXPECT_TRUE(l.release());
    EXPECT_FALSE(l.held());
    s = lease_status(name);
    EXPECT_FALSE(s.valid);
    EXPECT_EQ(s.holder, "");
    EXPECT_FALSE(l.renew()); // never revived
    EXPECT_FALSE(l.release());
}

TEST_F(pg_lease, second_client_is_refused_and_learns_the_holder) {
    const auto name = unique_name("second");
    pq_backend db_a{env_options()};
    pq_backend db_b{env_options()};
    lease a{db_a, name, with_ttl(3s)};
    lease b{db_b, name, with_ttl(3s)};
    const auto before = steady::now(); // a's grant, so its expiry, comes after this
    ASSERT_TRUE(a.acquire());
    EXPECT_FALSE(b.acquire());
    EXPECT_FALSE(b.held());
    EXPECT_EQ(b.holder(), a.identity());
    ASSERT_TRUE(b.expiry_hint());
    // b is told a's expiry, not its own ttl from now: no earlier than
    // before + 3 s (less the server's rounding), and at most 3 s away.
    const auto now = steady::now();
    const auto left = *b.expiry_hint() - now;
    EXPECT_GT(left, 3s - (now - before) - 50ms);
    EXPECT_LE(left, 3s + 100ms);
    EXPECT_THROW((void)b.token(), lease_lost);
}

TEST_F(pg_lease, release_wakes_a_waiting_follower_through_notify) {
    const auto name = unique_name("notify");
    pq_backend db_a{env_options()};
    pq_backend db_b{env_options()};
    lease a{db_a, name, with_ttl(30s)}; // expiry far away: waiting for it would take 30 s
    lease b{db_b, name, with_ttl(30s)};
    ASSERT_TRUE(a.acquire());

    auto waiter = std::async(std::launch::async, [&] {
        const bool got = b.acquire_for(20s);
        return std::make_pair(got, steady::now());
    });
    std::this_thread::sleep_for(300ms); // b is asleep in its wait by now
    const auto released = steady::now();
    ASSERT_TRUE(a.release());
    ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready) << "follower still waiting";
    const auto [got, at] = waiter.get();
    ASSERT_TRUE(got);
    const auto latency = std::chrono::duration_cast<ms>(at - released);
    std::cout << "[ timing ] release -> waiting follower holds: " << latency.count() << " ms\n";
    // The follower's only timer was the reported expiry, ~29.7 s away.
    EXPECT_LT(latency, 1s);
    EXPECT_TRUE(b.held());
    EXPECT_GT(b.epoch(), a.epoch());
}

namespace {

/// The follower's backend: tells when its first acquire was refused, so
/// the holder releases only once the follower waits (a follower whose
/// first call came after the release, e.g. a connect slowed by a loaded
/// machine, would be granted at once and prove nothing).
class first_refusal final : public test::forwarding_backend {
public:
    using backend::acquire;
    using forwarding_backend::forwarding_backend;
    acquire_reply acquire(const std::string& n, const std::string& h, std::chrono::milliseconds t,
                          std::chrono::milliseconds ld, clock::time_point d) override {
        auto reply = forwarding_backend::acquire(n, h, t, ld, d);
        if (!reply.acquired && !m_said.exchange(true))
            m_refused.set_value();
        return reply;
    }
    std::future<void> refused() { return m_refused.get_future(); }

private:
    std::atomic<bool> m_said{false};
    std::promise<void> m_refused;
};

} // namespace

TEST_F(pg_lease, without_listen_a_follower_wakes_at_the_reported_expiry) {
    const auto name = unique_name("nolisten");
    pq_backend db_a{env_options()};
    connection_options quiet = env_options();
    quiet.listen = false;
    first_refusal db_b{std::make_unique<pq_backend>(quiet)};
    auto refused = db_b.refused();
    lease a{db_a, name, with_ttl(1500ms)};
    lease b{db_b, name, with_ttl(1500ms)};
    // Before a's request: its grant, and so the expiry b is told, ends at
    // least 1.5 s after this.
    const auto start = steady::now();
    ASSERT_TRUE(a.acquire());
    std::thread releaser{[&] {
        if (refused.wait_for(10s) == std::future_status::ready)
            (void)a.release(); // b is refused and waits for the expiry it was told
    }};
    EXPECT_TRUE(b.acquire_for(10s));
    releaser.join();
    const auto waited = steady::now() - start;
    EXPECT_GE(waited, 1200ms) << "woke before the expiry without an event";
    EXPECT_LT(waited, 5s) << "waited past the reported expiry";
}

TEST_F(pg_lease, fenced_writes_pass_for_the_holder_and_are_refused_once_it_is_stale) {
    const auto name = unique_name("fence");
    const auto table = unique_name("fenced");
    make_fenced_table(table, name);
    pq_backend db_a{env_options()};
    pq_backend db_b{env_options()};
    // 2.5 s, not less: a loaded CI machine once took 0.9 s between a
    // 1 s grant and its first write, past the local deadline.
    constexpr auto ttl_a = 2500ms;
    lease a{db_a, name, with_ttl(ttl_a)};
    lease b{db_b, name, with_ttl(3s)};
    pqxx::connection app_a{""};
    pqxx::connection app_b{""};
    const std::string insert = "INSERT INTO " + app_a.quote_name(table) + " (note) VALUES ";

    ASSERT_TRUE(a.acquire());
    const auto granted_by = steady::now(); // the server's grant started before this
    const int n = a.run_fenced(app_a, [&](pqxx::work& tx) {
        pqxx_compat::exec0(tx, insert + "('a')");
        return 1;
    });
    EXPECT_EQ(n, 1);
    const fence_token stale = a.token();

    std::this_thread::sleep_until(granted_by + ttl_a + 100ms); // a expires on the server
    EXPECT_FALSE(a.held());
    EXPECT_THROW(
        a.run_fenced(app_a, [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert + "('x')"); }),
        lease_lost); // refused locally, before any I/O

    // Expired, not yet taken over: the server says LS002.
    try {
        run_fenced(app_a, stale, [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert + "('x')"); });
        ADD_FAILURE() << "expired token accepted";
    } catch (const fence_rejected& e) {
        EXPECT_EQ(e.sqlstate(), "LS002");
        EXPECT_FALSE(e.stale_epoch());
    }

    ASSERT_TRUE(b.acquire());
    b.run_fenced(app_b, [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert + "('b')"); });
    try {
        run_fenced(app_a, stale, [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert + "('x')"); });
        ADD_FAILURE() << "stale token accepted";
    } catch (const fence_rejected& e) {
        EXPECT_EQ(e.sqlstate(), "LS001");
        EXPECT_TRUE(e.stale_epoch());
    }

    pqxx::nontransaction check{admin()};
    const auto rows =
        check.exec("SELECT note, epoch FROM " + check.quote_name(table) + " ORDER BY id");
    ASSERT_EQ(rows.size(), 2U);
    EXPECT_EQ(rows[0][0].as<std::string>(), "a");
    EXPECT_EQ(rows[0][1].as<std::int64_t>(), stale.epoch);
    EXPECT_EQ(rows[1][0].as<std::string>(), "b");
    EXPECT_EQ(rows[1][1].as<std::int64_t>(), b.epoch());
}

TEST_F(pg_lease, a_write_to_a_table_fenced_by_another_lease_has_no_token) {
    const auto name = unique_name("tok");
    const auto other = unique_name("tok_other");
    const auto table = unique_name("fenced_other");
    make_fenced_table(table, other);
    pq_backend db{env_options()};
    lease l{db, name, with_ttl(3s)};
    ASSERT_TRUE(l.acquire());
    pqxx::connection app{""};
    EXPECT_THROW(l.run_fenced(app,
                              [&](pqxx::work& tx) {
                                  pqxx_compat::exec0(tx, "INSERT INTO " + tx.quote_name(table) +
                                                             " (note) VALUES ('x')");
                              }),
                 missing_token);
    EXPECT_TRUE(l.held()); // a usage error is not a lost lease
}

TEST_F(pg_lease, connection_lost_before_commit_and_unknown_outcome_at_commit) {
    const auto name = unique_name("commit");
    const auto table = unique_name("fenced_commit");
    make_fenced_table(table, name);
    pq_backend db{env_options()};
    lease l{db, name, with_ttl(5s)};
    ASSERT_TRUE(l.acquire());

    const auto kill_own_session = [&](pqxx::work& tx) {
        const int pid = tx.conn().backendpid();
        {
            pqxx::nontransaction k{admin()};
            k.exec("SELECT pg_terminate_backend(" + std::to_string(pid) + ")");
        }
        ASSERT_TRUE(eventually(
            [&] {
                pqxx::nontransaction q{admin()};
                return q.exec("SELECT 1 FROM pg_stat_activity WHERE pid = " + std::to_string(pid))
                    .empty();
            },
            5s));
    };

    {
        pqxx::connection app{""};
        EXPECT_THROW(l.run_fenced(app,
                                  [&](pqxx::work& tx) {
                                      kill_own_session(tx);
                                      pqxx_compat::exec0(tx, "INSERT INTO " + tx.quote_name(table) +
                                                                 " (note) VALUES ('x')");
                                  }),
                     connection_lost);
    }
    {
        pqxx::connection app{""};
        EXPECT_THROW(l.run_fenced(app, [&](pqxx::work& tx) { kill_own_session(tx); }),
                     commit_unknown);
    }
    EXPECT_TRUE(l.held());
}

TEST_F(pg_lease, a_release_whose_session_died_while_idle_reconnects_and_frees_the_lease) {
    const auto name = unique_name("release_dead");
    pq_backend db{env_options()};
    lease l{db, name, with_ttl(30s)};
    ASSERT_TRUE(l.acquire());
    const int pid = db.server_pid();
    ASSERT_GT(pid, 0);
    test::terminate_backend(admin(), pid);
    // The first call finds the session dead; the second reconnects. Without
    // it the lease would stay held on the server for its 30 s ttl.
    EXPECT_TRUE(l.release());
    EXPECT_FALSE(l.held());
    const auto s = lease_status(name);
    EXPECT_FALSE(s.valid);
    EXPECT_EQ(s.holder, "");
    EXPECT_NE(db.server_pid(), pid);
}

TEST_F(pg_lease, server_rejects_a_ttl_above_its_maximum) {
    pq_backend db{env_options()};
    lease l{db, unique_name("maxttl"), with_ttl(std::chrono::hours{24 * 3})};
    try {
        (void)l.acquire();
        ADD_FAILURE() << "3-day ttl accepted";
    } catch (const invalid_argument& e) {
        EXPECT_EQ(e.sqlstate(), "22023");
    }
}

TEST_F(pg_lease, unreachable_server_is_connection_lost_and_fast) {
    connection_options o;
    o.conninfo = "host=127.0.0.1 port=1";
    pq_backend db{o};
    lease l{db, unique_name("unreachable"), with_ttl(3s)};
    const auto start = steady::now();
    EXPECT_THROW((void)l.acquire(), connection_lost);
    EXPECT_LT(steady::now() - start, 3s);
    EXPECT_FALSE(l.held());
}

TEST_F(pg_lease, schema_qualified_calls_work) {
    pqxx::nontransaction tx{admin()};
    const auto schema =
        pqxx_compat::exec1(
            tx, "SELECT n.nspname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE p.proname = 'lease_acquire' LIMIT 1")[0]
            .as<std::string>();
    connection_options o = env_options();
    o.schema = schema;
    pq_backend db{o};
    lease l{db, unique_name("schema"), with_ttl(3s)};
    l.set_schema(schema);
    ASSERT_TRUE(l.acquire());
    EXPECT_TRUE(l.renew());
    pqxx::connection app{""};
    l.run_fenced(app, [](pqxx::work& w) { w.exec("SELECT 1"); });
    EXPECT_TRUE(l.release());
}

TEST_F(pg_lease, scoped_lease_renews_while_alive_and_releases_at_the_end) {
    const auto name = unique_name("scoped");
    std::int64_t epoch = 0;
    {
        scoped_lease guard{name, with_ttl(1000ms), 0ms, env_options()};
        ASSERT_TRUE(guard);
        epoch = guard.epoch();
        std::this_thread::sleep_for(2500ms); // 2.5 ttl
        EXPECT_TRUE(guard.held());
        const auto s = lease_status(name);
        EXPECT_TRUE(s.valid);
        EXPECT_EQ(s.epoch, epoch);

        scoped_lease other{name, with_ttl(1000ms), 0ms, env_options()};
        EXPECT_FALSE(other);
        EXPECT_FALSE(other.holder().empty());
    }
    const auto s = lease_status(name);
    EXPECT_FALSE(s.valid);
    EXPECT_EQ(s.holder, "");
    EXPECT_EQ(s.epoch, epoch);
}

} // namespace
} // namespace pglease::test
