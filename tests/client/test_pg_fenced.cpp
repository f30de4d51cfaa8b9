/// @file test_pg_fenced.cpp
/// @brief The one-round-trip fenced transaction (the fenced block) against the
/// real server: the round trips counted on the wire (libpq trace), the
/// first write already fenced (stale LS001, expired LS002) on a session
/// that has not loaded pg_lease yet, the token (SET LOCAL pg_lease.epoch)
/// gone with the transaction while the session's own pg_lease.epoch stays,
/// the token's checks and a broken connection mapped as before, the
/// pqxx::work& form still working.
#include "pg_fenced_fixture.hpp"
#include "pg_fixture.hpp"
#include "pglease/error.hpp"
#include "pglease/fence.hpp"
#include "pglease/lease.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"
#include "wire_counter.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;

/// Counts the round trips a block of code makes through @p wire (its
/// connection's relay), from its construction to stop().
class round_trip_counter {
public:
    explicit round_trip_counter(wire_counter& wire)
        : m_wire{wire} {
        m_wire.reset();
    }

    /// Stops counting; returns the round trips seen.
    int stop() {
        if (!m_stopped) {
            m_stopped = true;
            m_round_trips = m_wire.round_trips();
            m_log = m_wire.log();
        }
        return m_round_trips;
    }

    [[nodiscard]] const std::string& log() const noexcept { return m_log; }

private:
    wire_counter& m_wire;
    bool m_stopped = false;
    int m_round_trips = 0;
    std::string m_log;
};

/// The test server's port (PGPORT), for a relay in front of it.
int server_port() {
    const char* port = std::getenv("PGPORT");
    return port != nullptr ? std::atoi(port) : 5432;
}

TEST_F(pg_fenced, the_fast_form_makes_as_many_round_trips_as_a_plain_work) {
    wire_counter wire{server_port()};
    pqxx::connection app{wire.conninfo()};
    const auto plain = [&] {
        round_trip_counter count{wire};
        pqxx::work tx{app};
        pqxx_compat::exec0(tx, "INSERT INTO " + tx.quote_name(m_table + "_plain") + " VALUES (1)");
        tx.commit();
        return count.stop();
    };
    {
        pqxx::nontransaction tx{app};
        pqxx_compat::exec0(tx, "CREATE TABLE " + tx.quote_name(m_table + "_plain") + " (x int)");
    }
    const int plain_trips = plain();

    round_trip_counter fast_count{wire};
    m_lease->run_fenced(
        app, [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("fast")); });
    const int fast_trips = fast_count.stop();

    round_trip_counter generic_count{wire};
    m_lease->run_fenced(app, [&](auto& tx) { pqxx_compat::exec0(tx, insert("generic")); });
    const int generic_trips = generic_count.stop();

    round_trip_counter old_count{wire};
    m_lease->run_fenced(app, [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert("work")); });
    const int old_trips = old_count.stop();

    EXPECT_EQ(plain_trips, 3); // BEGIN, INSERT, COMMIT
    EXPECT_EQ(fast_trips, plain_trips) << fast_count.log();
    EXPECT_EQ(generic_trips, plain_trips) << generic_count.log();
    EXPECT_EQ(old_trips, plain_trips + 1) << old_count.log(); // + lease_use
    EXPECT_NE(fast_count.log().find("Q BEGIN; SET LOCAL pg_lease.epoch = '" +
                                    std::to_string(m_lease->epoch()) + "'"),
              std::string::npos)
        << fast_count.log();
    EXPECT_NE(old_count.log().find("lease_use"), std::string::npos) << old_count.log();
    EXPECT_EQ(rows(), 3);
}

TEST_F(pg_fenced, a_stale_token_fails_the_very_first_write_and_nothing_commits) {
    const fence_token stale = m_lease->token();
    ASSERT_TRUE(m_lease->release());
    pq_backend other_db{env_options("fenced-other")};
    lease other{other_db, m_name, {}};
    ASSERT_TRUE(other.acquire());
    ASSERT_GT(other.epoch(), stale.epoch);

    pqxx::connection app{""};
    int statements = 0;
    try {
        run_fenced(app, stale, [&](pqxx::transaction_base& tx) {
            ++statements;
            pqxx_compat::exec0(tx, insert("stale")); // the first statement: refused
            ++statements;
            pqxx_compat::exec0(tx, insert("stale 2"));
        });
        ADD_FAILURE() << "the stale token's write committed";
    } catch (const fence_rejected& e) {
        EXPECT_EQ(e.sqlstate(), "LS001");
        EXPECT_TRUE(e.stale_epoch());
    }
    EXPECT_EQ(statements, 1);
    EXPECT_EQ(rows(), 0);
    // The session is clean: the next fenced transaction of the new holder passes.
    other.run_fenced(app,
                     [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("new")); });
    EXPECT_EQ(rows(), 1);
}

TEST_F(pg_fenced, the_first_write_is_fenced_in_a_session_that_had_not_loaded_pg_lease) {
    // SET LOCAL of a setting whose library is not loaded yet makes a
    // placeholder; the trigger loads pg_lease, which takes the value over.
    const fence_token stale{m_name, m_lease->epoch() - 1, {}};
    pqxx::connection app{""};
    bool loaded_before = true;
    try {
        run_fenced(app, stale, [&](pqxx::transaction_base& tx) {
            // A defined pg_lease.* setting shows in pg_settings; a placeholder does not.
            loaded_before =
                pqxx_compat::exec1(
                    tx, "SELECT count(*) FROM pg_settings WHERE name = 'pg_lease.max_ttl'")[0]
                    .as<long>() > 0;
            pqxx_compat::exec0(tx, insert("stale"));
        });
        ADD_FAILURE() << "the stale token's write committed";
    } catch (const fence_rejected& e) {
        EXPECT_EQ(e.sqlstate(), "LS001");
    }
    const char* preload = std::getenv("PG_TEST_PRELOAD");
    if (preload == nullptr || *preload == '\0') {
        EXPECT_FALSE(loaded_before) << "the session had loaded pg_lease already";
    }
    EXPECT_EQ(rows(), 0);
}

TEST_F(pg_fenced, an_expired_token_fails_the_very_first_write_with_ls002) {
    // A grant of 1 s made on the server, so the local lease is not involved
    // (long enough for the first write on a loaded machine).
    const std::string name = unique_name("expiring");
    const std::string table = unique_name("expiring_tbl");
    make_fenced_table(table, name);
    std::int64_t epoch = 0;
    {
        pqxx::nontransaction q{admin()};
        epoch = pqxx_compat::exec_params1(q, "SELECT epoch FROM lease_acquire($1, 'short', '1 s')",
                                          name)[0]
                    .as<std::int64_t>();
    }
    pqxx::connection app{""};
    const std::string insert = "INSERT INTO " + app.quote_name(table) + " (note) VALUES ('x')";
    run_fenced(app, fence_token{name, epoch, {}}, [&](pqxx::transaction_base& tx) {
        pqxx_compat::exec0(tx, insert);
    }); // valid: passes
    std::this_thread::sleep_for(1100ms);
    int statements = 0;
    try {
        run_fenced(app, fence_token{name, epoch, {}}, [&](pqxx::transaction_base& tx) {
            ++statements;
            pqxx_compat::exec0(tx, insert);
            ++statements;
        });
        ADD_FAILURE() << "the expired token's write committed";
    } catch (const fence_rejected& e) {
        EXPECT_EQ(e.sqlstate(), "LS002");
        EXPECT_FALSE(e.stale_epoch());
    }
    EXPECT_EQ(statements, 1);
    pqxx::nontransaction q{admin()};
    EXPECT_EQ(pqxx_compat::exec1(q, "SELECT count(*) FROM " + q.quote_name(table))[0].as<long>(),
              1);
}

TEST_F(pg_fenced, the_token_of_another_lease_is_refused_as_a_stale_epoch) {
    // The one-round-trip form carries a bare epoch (pg_lease.epoch): on a
    // table of another lease it is not that lease's current epoch.
    pq_backend other_db{env_options("fenced-other-lease")};
    lease other{other_db, m_name + "_other", {}};
    ASSERT_TRUE(other.acquire());
    pqxx::connection app{""};
    try {
        run_fenced(app, other.token(),
                   [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("other")); });
        ADD_FAILURE() << "another lease's token passed";
    } catch (const fence_rejected& e) {
        EXPECT_EQ(e.sqlstate(), "LS001");
    }
    EXPECT_EQ(rows(), 0);
    // Declared for this lease with lease_use() inside fn, it takes precedence.
    run_fenced(app, other.token(), [&](pqxx::transaction_base& tx) {
        pqxx_compat::exec_params1(tx, "SELECT lease_use($1, $2)", m_name, m_lease->epoch());
        pqxx_compat::exec0(tx, insert("declared"));
    });
    EXPECT_EQ(rows(), 1);
}

TEST_F(pg_fenced, a_token_with_an_empty_name_or_an_epoch_not_positive_is_invalid_argument) {
    wire_counter wire{server_port()};
    pqxx::connection app{wire.conninfo()};
    int called = 0;
    {
        round_trip_counter count{wire};
        EXPECT_THROW(
            run_fenced(app, fence_token{m_name, 0, {}}, [&](pqxx::transaction_base&) { ++called; }),
            invalid_argument); // epoch must be positive (22023)
        EXPECT_THROW(run_fenced(app, fence_token{m_name, -3, {}},
                                [&](pqxx::transaction_base&) { ++called; }),
                     invalid_argument);
        EXPECT_THROW(
            run_fenced(app, fence_token{"", 5, {}}, [&](pqxx::transaction_base&) { ++called; }),
            invalid_argument); // empty name
        EXPECT_THROW(run_fenced(app, fence_token{std::string(256, 'n'), 5, {}},
                                [&](pqxx::transaction_base&) { ++called; }),
                     invalid_argument);            // longer than a lease name can be
        EXPECT_EQ(count.stop(), 0) << count.log(); // refused before any I/O
    }
    EXPECT_EQ(called, 0);
    m_lease->run_fenced(
        app, [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("after")); });
    EXPECT_EQ(rows(), 1);
}

TEST_F(pg_fenced, lease_names_with_quotes_and_backslashes_are_quoted) {
    const std::string name = unique_name("it's \"q\" \\ ;");
    const std::string table = unique_name("quoted_tbl");
    make_fenced_table(table, name);
    pq_backend db{env_options("fenced-quoted")};
    lease l{db, name, {}};
    ASSERT_TRUE(l.acquire());
    pqxx::connection app{""};
    l.run_fenced(app, [&](pqxx::transaction_base& tx) {
        pqxx_compat::exec0(tx, "INSERT INTO " + tx.quote_name(table) + " (note) VALUES ('q')");
    });
    pqxx::nontransaction q{admin()};
    const auto r = pqxx_compat::exec1(q, "SELECT count(*), max(epoch) FROM " + q.quote_name(table));
    EXPECT_EQ(r[0].as<long>(), 1);
    EXPECT_EQ(r[1].as<std::int64_t>(), l.epoch());
}

TEST_F(pg_fenced, a_connection_lost_inside_the_transaction_is_connection_lost) {
    pqxx::connection app{"application_name=fenced-lost"};
    EXPECT_THROW(m_lease->run_fenced(app,
                                     [&](pqxx::transaction_base& tx) {
                                         pqxx_compat::exec0(tx, insert("lost"));
                                         ASSERT_EQ(terminate("fenced-lost"), 1);
                                         pqxx_compat::exec0(tx, insert("lost 2"));
                                     }),
                 connection_lost);
    EXPECT_TRUE(m_lease->held());
    EXPECT_EQ(rows(), 0);
}

TEST_F(pg_fenced, no_token_outlives_its_transaction_in_the_session) {
    pqxx::connection app{""};
    m_lease->run_fenced(
        app, [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("fenced")); });
    // The same session, without a token: the fence refuses (LS003).
    pqxx::work tx{app};
    try {
        pqxx_compat::exec0(tx, insert("bare"));
        ADD_FAILURE() << "a write without a token passed after a fenced transaction";
    } catch (const pqxx::sql_error& e) {
        EXPECT_EQ(std::string{e.sqlstate()}, "LS003");
    }
}

TEST_F(pg_fenced, the_sessions_own_pg_lease_epoch_is_left_as_it_was) {
    // The session carries a token of its own (an epoch this lease never
    // had); the fenced block's SET LOCAL overrides it for its transaction only.
    pqxx::connection app{""};
    const std::string session_epoch = "1, 2";
    {
        pqxx::nontransaction q{app};
        pqxx_compat::exec0(q, "SET pg_lease.epoch = '" + session_epoch + "'");
    }
    const auto setting = [&] {
        pqxx::nontransaction q{app};
        return pqxx_compat::exec1(q, "SHOW pg_lease.epoch")[0].as<std::string>();
    };
    const auto bare_write_state = [&]() -> std::string {
        try {
            pqxx::work tx{app};
            pqxx_compat::exec0(tx, insert("bare"));
            tx.commit();
            return "committed";
        } catch (const pqxx::sql_error& e) {
            return std::string{e.sqlstate()};
        }
    };
    m_lease->run_fenced(app, [&](pqxx::transaction_base& tx) {
        EXPECT_EQ(pqxx_compat::exec1(tx, "SHOW pg_lease.epoch")[0].as<std::string>(),
                  std::to_string(m_lease->epoch()));
        pqxx_compat::exec0(tx, insert("fenced"));
    });
    EXPECT_EQ(rows(), 1);
    EXPECT_EQ(setting(), session_epoch);
    EXPECT_EQ(bare_write_state(), "LS001"); // the session's stale epochs again

    // A fenced transaction that fails (a stale token) restores it too.
    EXPECT_THROW(
        run_fenced(app, fence_token{m_name, m_lease->epoch() - 1, {}},
                   [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("stale")); }),
        fence_rejected);
    EXPECT_EQ(setting(), session_epoch);
    EXPECT_EQ(rows(), 1);

    // A session setting of the current epoch keeps working after run_fenced.
    {
        pqxx::nontransaction q{app};
        pqxx_compat::exec0(q, "SET pg_lease.epoch = '" + std::to_string(m_lease->epoch()) + "'");
    }
    m_lease->run_fenced(
        app, [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("fenced 2")); });
    EXPECT_EQ(bare_write_state(), "committed");
    EXPECT_EQ(rows(), 3);
}

TEST_F(pg_fenced, a_value_is_returned_from_the_fast_form) {
    pqxx::connection app{""};
    const auto id = m_lease->run_fenced(app, [&](pqxx::dbtransaction& tx) {
        return pqxx_compat::exec1(tx, insert("ret") + " RETURNING id")[0].as<long>();
    });
    EXPECT_GT(id, 0);
}

} // namespace
} // namespace pglease::test
