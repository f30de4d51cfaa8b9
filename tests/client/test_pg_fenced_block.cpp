/// @file test_pg_fenced_block.cpp
/// @brief The fenced block's own edges against the real server: a broken
/// connection (reopened on libpqxx 6.4 only), a block the callable aborted,
/// a block whose failed statement was caught by the callable.
#include "pg_fenced_fixture.hpp"
#include "pglease/error.hpp"
#include "pglease/fence.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <string>

namespace pglease::test {
namespace {

TEST_F(pg_fenced, a_connection_found_broken_at_begin_is_reopened_where_libpqxx_can) {
    pqxx::connection app{"application_name=fenced-broken"};
    m_lease->run_fenced(app,
                        [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("one")); });
    ASSERT_EQ(terminate("fenced-broken"), 1); // the idle session dies
    // libpq still believes the session open: the BEGIN finds it broken.
    const auto two = [&] {
        m_lease->run_fenced(
            app, [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("two")); });
    };
    if constexpr (pqxx_compat::reopens) {
        two(); // libpqxx 6.4 reopens it, and the BEGIN is tried again
        EXPECT_EQ(rows(), 2);
    } else {
        // From libpqxx 7 a broken connection stays closed: nothing sent.
        EXPECT_THROW(two(), connection_lost);
        EXPECT_FALSE(app.is_open());
        EXPECT_THROW(two(), connection_lost);
        EXPECT_EQ(rows(), 1);
    }
}

TEST_F(pg_fenced, a_block_the_callable_aborted_is_rolled_back_and_the_session_stays_clean) {
    pqxx::connection app{""};
    EXPECT_ANY_THROW(m_lease->run_fenced(app, [&](pqxx::transaction_base& tx) {
        pqxx_compat::exec0(tx, insert("aborted"));
        tx.abort();
    }));
    EXPECT_EQ(rows(), 0);
    m_lease->run_fenced(
        app, [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("next")); });
    EXPECT_EQ(rows(), 1);
}

TEST_F(pg_fenced, a_block_whose_statement_failed_commits_nothing_even_when_the_error_was_caught) {
    pqxx::connection app{""};
    const auto swallowed = [&] {
        m_lease->run_fenced(app, [&](pqxx::transaction_base& tx) {
            pqxx_compat::exec0(tx, insert("before"));
            try {
                tx.exec("SELECT 1/0");
            } catch (const pqxx::sql_error&) {
                // swallowed: the server's block is failed now
            }
        });
    };
    // The server answers COMMIT with ROLLBACK; libpqxx keeps that answer
    // private (as for pqxx::work), so the call returns: nothing committed.
    swallowed();
    EXPECT_EQ(rows(), 0);
    m_lease->run_fenced(
        app, [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("next")); });
    EXPECT_EQ(rows(), 1);
}

} // namespace
} // namespace pglease::test
