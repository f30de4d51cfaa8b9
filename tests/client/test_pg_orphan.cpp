/// @file test_pg_orphan.cpp
/// @brief A call the client had to sever leaves nothing running on the
/// server: with the postmaster frozen (SIGSTOP), the watchdog's cancel
/// request cannot land, so it severs the session; the server's backend,
/// waiting on a row lock, must notice its client is gone within
/// client_connection_check_interval (1 s) instead of running on until
/// statement_timeout (60 s here) holding what it locked. Run by
/// server_control.sh (a cluster of its own: the postmaster is frozen).
#include "pg_fixture.hpp"
#include "pglease/error.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <csignal>
#include <fstream>
#include <future>
#include <iostream>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

/// SIGSTOPs the postmaster of $PGLEASE_TEST_DATA_DIR; SIGCONTs it again
/// when destroyed (also when an assertion ends the test early).
class frozen_postmaster {
public:
    explicit frozen_postmaster(pid_t pid)
        : m_pid{pid} {
        if (::kill(m_pid, SIGSTOP) != 0)
            m_pid = -1;
    }
    ~frozen_postmaster() {
        if (m_pid > 0)
            (void)::kill(m_pid, SIGCONT);
    }
    frozen_postmaster(const frozen_postmaster&) = delete;
    frozen_postmaster& operator=(const frozen_postmaster&) = delete;
    frozen_postmaster(frozen_postmaster&&) = delete;
    frozen_postmaster& operator=(frozen_postmaster&&) = delete;

    [[nodiscard]] bool frozen() const noexcept { return m_pid > 0; }

private:
    pid_t m_pid;
};

pid_t postmaster_pid() {
    const char* dir = std::getenv("PGLEASE_TEST_DATA_DIR");
    if (dir == nullptr)
        return -1;
    std::ifstream in{std::string{dir} + "/postmaster.pid"};
    pid_t pid = -1;
    in >> pid;
    return pid;
}

class pg_orphan : public pg_test {};

TEST_F(pg_orphan, a_severed_call_ends_on_the_server_within_the_client_check_interval) {
    const pid_t postmaster = postmaster_pid();
    ASSERT_GT(postmaster, 0) << "run by tests/client/server_control.sh";
    const std::string name = unique_name("orphan");
    const std::string app = "pglease-orphan";

    // Connections made before the postmaster freezes: one holds the lease's
    // row lock, one watches pg_stat_activity (a fresh snapshot per query).
    // The grant has expired, so the next acquire takes it over, for which it
    // must lock the row (a refusal would be decided without a lock).
    pq_backend setup{env_options()};
    ASSERT_TRUE(setup.acquire(name, "a", 100ms, clock::time_point::max()).acquired);
    ASSERT_TRUE(eventually([&] { return !lease_status(name).valid; }, 5s));
    pqxx::connection locker{""};
    pqxx::work lock_tx{locker};
    pqxx_compat::exec_params(lock_tx, "SELECT 1 FROM leases WHERE name = $1 FOR UPDATE", name);
    pqxx::connection watcher{""};
    const auto count = [&](const std::string& where) {
        pqxx::nontransaction tx{watcher};
        return pqxx_compat::exec_params1(
                   tx,
                   "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND " + where,
                   app)[0]
            .as<int>();
    };

    connection_options o = env_options(app);
    o.acquire_timeout = 60s; // the server's backstop: statement_timeout 60 s
    pq_backend db{o};
    db.connect();

    // The acquire waits on the row lock; its deadline passes while the
    // postmaster is frozen, so the cancel request cannot be served.
    auto call = std::async(std::launch::async, [&] {
        try {
            (void)db.acquire(name, "b", 10s, steady::now() + 3s);
            return std::string{"returned"};
        } catch (const error& e) {
            return std::string{e.what()};
        }
    });
    ASSERT_TRUE(eventually([&] { return count("wait_event_type = 'Lock'") == 1; }, 2s))
        << "the acquire never waited on the row lock";
    frozen_postmaster frozen{postmaster};
    ASSERT_TRUE(frozen.frozen());

    ASSERT_EQ(call.wait_for(10s), std::future_status::ready) << "the call was not bounded";
    const auto severed = steady::now();
    const std::string outcome = call.get();
    EXPECT_NE(outcome, "returned");
    std::cout << "[ outcome ] " << outcome << "\n";

    // The server's side of the severed call: gone within the check
    // interval (1 s), with generous slack; statement_timeout would be 60 s.
    ASSERT_TRUE(eventually([&] { return count("true") == 0; }, 8s))
        << "the severed call's backend still runs on the server";
    std::cout << "[ timing ] severed -> backend gone: "
              << std::chrono::duration_cast<ms>(steady::now() - severed).count()
              << " ms (client_connection_check_interval 1000 ms)\n";
    lock_tx.abort();
}

} // namespace
} // namespace pglease::test
