/// @file test_pg_lock_table.cpp
/// @brief Grants and releases of many leases fit a small lock table. A
/// change of holder holds the ending grant's fence lock, one entry of the
/// server's shared lock table, until its commit; so pq_backend sends
/// acquire_many and release_many in statements of 64 names. Run by
/// server_control.sh, whose cluster has max_locks_per_transaction = 10 and
/// max_connections = 20: a lock table of a few hundred entries, which one
/// statement changing the holder of 2,000 leases overflows.
#include "pg_fixture.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <cstdio>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;

class pg_lock_table : public pg_test {};

constexpr int leases = 2000;

std::vector<std::string> lease_names() {
    std::vector<std::string> out;
    for (int i = 0; i < leases; ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "lt/%04d", i);
        out.emplace_back(name);
    }
    return out;
}

TEST_F(pg_lock_table, changes_of_holder_of_many_leases_fit_a_small_lock_table) {
    {
        pqxx::nontransaction q{admin()};
        ASSERT_LE(
            pqxx_compat::exec1(q, "SELECT current_setting('max_locks_per_transaction')::int")[0]
                .as<int>(),
            10)
            << "server_control.sh's cluster sets a small lock table";
    }
    const std::vector<std::string> names = lease_names();
    pq_backend a{env_options("lock-table-a")};
    const auto deadline = [] { return std::chrono::steady_clock::now() + 60s; };
    std::vector<std::int64_t> epochs;
    for (const acquire_reply& r : a.acquire_many(names, "a", 60s, 0ms, deadline())) {
        ASSERT_TRUE(r.acquired);
        epochs.push_back(r.epoch);
    }

    // The premise: all of them released in one statement overflow the table.
    try {
        pqxx::nontransaction q{admin()};
        q.exec("SELECT bool_and(lease_release(name, holder, epoch)) FROM lease_status "
               "WHERE name LIKE 'lt/%'");
        FAIL() << "one statement released 2,000 leases: the lock table is not small";
    } catch (const pqxx::sql_error& e) {
        EXPECT_EQ(std::string{e.sqlstate()}, "53200") << e.what();
    }
    EXPECT_EQ(lease_status("lt/1999").holder, "a"); // rolled back

    // Through the backend: statements of 64, every one released ...
    for (const bool released : a.release_many(names, "a", epochs, deadline()))
        ASSERT_TRUE(released);
    // ... and every free lease granted to another holder (a change of holder each).
    pq_backend b{env_options("lock-table-b")};
    for (const acquire_reply& r : b.acquire_many(names, "b", 60s, 0ms, deadline()))
        ASSERT_TRUE(r.acquired);
    EXPECT_EQ(lease_status("lt/0000").holder, "b");
    EXPECT_EQ(lease_status("lt/1999").holder, "b");
}

} // namespace
} // namespace pglease::test
