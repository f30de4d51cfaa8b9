/// @file test_pg_observer_restart.cpp
/// @brief pglease::observer across a server restart (pg_ctl stop -m
/// immediate, start): the view turns stale, then the observer reconnects on
/// its own, reads again and LISTENs again. Run by server_control.sh, which
/// gives it a throwaway cluster and the pg_ctl command to restart it.
#include "pg_fixture.hpp"
#include "pglease/lease.hpp"
#include "pglease/observer.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <cstdlib>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;

class pg_observer_restart : public pg_test {};

TEST_F(pg_observer_restart, follows_the_lease_across_a_server_restart) {
    const char* ctl = std::getenv("PGLEASE_TEST_PG_CTL");
    ASSERT_NE(ctl, nullptr) << "run by tests/client/server_control.sh";
    const std::string name = unique_name("restart");
    observer_options o;
    o.lease_name = name;
    o.connection = env_options("pglease-observer-restart");
    o.resync_period = 60s; // only notifications, the expiry and reconnects
    o.retry_period = 200ms;
    observer obs{o};
    obs.start();
    ASSERT_TRUE(eventually([&] { return obs.current().read_at != clock::time_point{}; }, 5s));

    pq_backend db{env_options()};
    lease_options lo;
    lo.identity = "before-restart";
    lo.ttl = 60000ms;
    lease a{db, name, lo};
    ASSERT_TRUE(a.acquire());
    ASSERT_TRUE(obs.wait_for_change(1s, 0));

    ASSERT_EQ(std::system((std::string{ctl} + " -m immediate -w stop >/dev/null").c_str()), 0);
    EXPECT_TRUE(eventually([&] { return obs.current().stale; }, 5s)) << "never noticed";
    EXPECT_TRUE(obs.current().valid); // the last view known is kept
    EXPECT_EQ(obs.current().holder, "before-restart");
    ASSERT_EQ(std::system((std::string{ctl} + " -w start >/dev/null").c_str()), 0);
    EXPECT_TRUE(eventually([&] { return !obs.current().stale; }, 5s)) << "did not reconnect";
    EXPECT_EQ(obs.current().version, 1U);

    // Listening again: a revoke after the restart is seen by notification
    // (the resync period is a minute).
    pqxx::connection admin2{""};
    {
        pqxx::nontransaction revoke{admin2};
        pqxx_compat::exec_params1(revoke, "SELECT lease_revoke($1)", name);
    }
    const auto v = obs.wait_for_change(1500ms, 1);
    ASSERT_TRUE(v) << "revoke after the restart not seen";
    EXPECT_EQ(v->holder, "");
    EXPECT_FALSE(v->valid);
}

} // namespace
} // namespace pglease::test
