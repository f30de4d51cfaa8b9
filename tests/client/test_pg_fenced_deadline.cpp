/// @file test_pg_fenced_deadline.cpp
/// @brief run_fenced()'s own deadline against the real server, whose
/// backend is frozen for real (SIGSTOP: no reply, no TCP reset): the call
/// returns within its bound, with connection_lost / lease_evicted when cut
/// before COMMIT and commit_unknown when cut during COMMIT; a callable whose
/// client-side work outlasts the bound is rolled back, no COMMIT sent; a
/// lease renewed meanwhile moves the bound.
#include "pg_fixture.hpp"
#include "pglease/error.hpp"
#include "pglease/fence.hpp"
#include "pglease/lease.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <csignal>
#include <sys/types.h>

#include <atomic>
#include <iostream>
#include <optional>
#include <thread>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

/// What the watchdog may add to a deadline: cancel grace + shutdown grace.
constexpr ms cut_grace{400};
/// Slack for a loaded 2-core machine (asserted: bound + this).
constexpr ms slack{2000};

/// SIGSTOPs a server backend while it lives, SIGCONTs it when it goes
/// (scope guard: a backend is never left stopped).
class frozen_backend {
public:
    explicit frozen_backend(int pid)
        : m_pid{static_cast<pid_t>(pid)}
        , m_stopped{::kill(m_pid, SIGSTOP) == 0} {}
    frozen_backend(const frozen_backend&) = delete;
    frozen_backend& operator=(const frozen_backend&) = delete;
    frozen_backend(frozen_backend&&) = delete;
    frozen_backend& operator=(frozen_backend&&) = delete;
    ~frozen_backend() {
        if (m_stopped)
            (void)::kill(m_pid, SIGCONT);
    }
    [[nodiscard]] bool stopped() const noexcept { return m_stopped; }

private:
    pid_t m_pid;
    bool m_stopped;
};

ms since(steady::time_point t) {
    return std::chrono::duration_cast<ms>(steady::now() - t);
}

class pg_fenced_deadline : public pg_test {
protected:
    void SetUp() override {
        pg_test::SetUp();
        m_name = unique_name("deadline");
        m_table = unique_name("deadline_tbl");
        make_fenced_table(m_table, m_name);
    }

    [[nodiscard]] std::string insert(const std::string& note) {
        return "INSERT INTO " + admin().quote_name(m_table) + " (note) VALUES ('" + note + "')";
    }

    [[nodiscard]] long rows() {
        pqxx::nontransaction q{admin()};
        return pqxx_compat::exec1(q, "SELECT count(*) FROM " + q.quote_name(m_table))[0].as<long>();
    }

    /// True once backend @p pid has gone (it saw its socket shut down).
    bool backend_gone(int pid) {
        return eventually(
            [&] {
                pqxx::nontransaction q{admin()};
                return pqxx_compat::exec_params1(
                           q, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid)[0]
                           .as<int>() == 0;
            },
            10s);
    }

    std::string m_name;
    std::string m_table;
};

TEST_F(pg_fenced_deadline, a_frozen_backend_before_commit_is_cut_at_the_timeout_connection_lost) {
    pq_backend db{env_options("deadline-holder")};
    lease_options o;
    o.ttl = 60s;
    lease l{db, m_name, o};
    ASSERT_TRUE(l.acquire());
    pqxx::connection app{"application_name=deadline-before"};
    const int pid = app.backendpid();
    constexpr ms timeout{1500};

    std::optional<frozen_backend> frozen;
    bool froze = false;
    const auto start = steady::now();
    try {
        run_fenced(
            app, l.token(),
            [&](pqxx::transaction_base& tx) {
                pqxx_compat::exec0(tx, insert("before"));
                frozen.emplace(pid); // frozen mid-transaction, its TCP connection open
                froze = frozen->stopped();
                tx.exec("SELECT 1"); // no reply until the deadline cuts it
            },
            timeout);
        ADD_FAILURE() << "the transaction on a frozen backend returned";
    } catch (const connection_lost& e) {
        std::cout << "[ info ] connection_lost after " << since(start).count()
                  << " ms: " << e.what() << "\n";
    } catch (const std::exception& e) {
        ADD_FAILURE() << "unexpected exception: " << e.what();
    }
    const ms took = since(start);
    frozen.reset(); // SIGCONT
    ASSERT_TRUE(froze) << "could not SIGSTOP the backend";
    EXPECT_GE(took, timeout - 100ms);
    EXPECT_LT(took, timeout + cut_grace + slack);
    EXPECT_TRUE(backend_gone(pid));
    EXPECT_EQ(rows(), 0);
    // libpqxx 6.4 reopens the connection at its next use; from 7.0 it stays
    // closed and the application opens a new one.
    std::optional<pqxx::connection> fresh;
    if (!pqxx_compat::reopens) {
        EXPECT_FALSE(app.is_open());
        fresh.emplace("application_name=deadline-after");
    }
    run_fenced(fresh ? *fresh : app, l.token(),
               [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("after")); });
    EXPECT_EQ(rows(), 1);
}

TEST_F(pg_fenced_deadline, a_bound_that_passed_during_client_side_work_sends_no_commit) {
    pq_backend db{env_options("deadline-holder")};
    lease_options o;
    o.ttl = 60s; // valid throughout: only the bound can refuse the COMMIT
    lease l{db, m_name, o};
    ASSERT_TRUE(l.acquire());
    pqxx::connection app{"application_name=deadline-client-work"};
    constexpr ms timeout{500};

    // The callable's statements are done in time; then it works on the
    // client (no statement in flight, so no cancel can end it) until just
    // past the bound, well before the watchdog would shut the socket.
    std::string outcome = "returned";
    const auto start = steady::now();
    try {
        run_fenced(
            app, l.token(),
            [&](pqxx::transaction_base& tx) {
                pqxx_compat::exec0(tx, insert("client-work"));
                std::this_thread::sleep_until(start + timeout + 50ms);
            },
            timeout);
    } catch (const connection_lost& e) {
        outcome = "connection_lost";
        std::cout << "[ info ] connection_lost after " << since(start).count()
                  << " ms: " << e.what() << "\n";
    } catch (const commit_unknown& e) {
        outcome = std::string{"commit_unknown: "} + e.what();
    } catch (const std::exception& e) {
        outcome = std::string{"unexpected: "} + e.what();
    }
    EXPECT_EQ(outcome, "connection_lost") << "a COMMIT was sent after the bound";
    EXPECT_EQ(rows(), 0);
    // Nothing is left open on the session: the next transaction commits.
    run_fenced(app, l.token(),
               [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("after")); });
    EXPECT_EQ(rows(), 1);
}

TEST_F(pg_fenced_deadline, a_frozen_backend_during_commit_is_commit_unknown) {
    pq_backend db{env_options("deadline-holder")};
    lease_options o;
    o.ttl = 60s;
    lease l{db, m_name, o};
    ASSERT_TRUE(l.acquire());
    {
        // COMMIT runs this deferred trigger: the backend sleeps inside COMMIT.
        pqxx::work tx{admin()};
        const std::string fn = tx.quote_name(m_table + "_slow");
        tx.exec("CREATE FUNCTION " + fn +
                "() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN PERFORM pg_sleep(5); RETURN NULL; END $$");
        tx.exec("CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON " + tx.quote_name(m_table) +
                " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION " + fn + "()");
        tx.commit();
    }
    pqxx::connection app{"application_name=deadline-commit"};
    const int pid = app.backendpid();
    constexpr ms timeout{2000};

    // Freezes the backend once it sleeps in the trigger, i.e. inside COMMIT.
    std::optional<frozen_backend> frozen;
    std::atomic<bool> froze{false};
    std::thread freezer{[&] {
        pqxx::connection watch{""};
        const auto until = steady::now() + 10s;
        while (steady::now() < until) {
            pqxx::nontransaction q{watch};
            const auto sleeping =
                pqxx_compat::exec_params1(q,
                                          "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 "
                                          "AND wait_event = 'PgSleep' AND query = 'COMMIT'",
                                          pid)[0]
                    .as<int>();
            if (sleeping == 1) {
                frozen.emplace(pid);
                froze = frozen->stopped();
                return;
            }
            std::this_thread::sleep_for(5ms);
        }
    }};

    const auto start = steady::now();
    try {
        run_fenced(
            app, l.token(),
            [&](pqxx::transaction_base& tx) { pqxx_compat::exec0(tx, insert("commit")); }, timeout);
        ADD_FAILURE() << "a COMMIT cut by the deadline was reported as a success";
    } catch (const commit_unknown& e) {
        std::cout << "[ info ] commit_unknown after " << since(start).count() << " ms: " << e.what()
                  << "\n";
    } catch (const std::exception& e) {
        ADD_FAILURE() << "unexpected exception (a COMMIT cut by the deadline must be "
                         "commit_unknown): "
                      << e.what();
    }
    const ms took = since(start);
    freezer.join();
    frozen.reset(); // SIGCONT
    ASSERT_TRUE(froze) << "the backend was never seen sleeping in COMMIT";
    EXPECT_GE(took, timeout - 100ms);
    EXPECT_LT(took, timeout + cut_grace + slack);
    EXPECT_TRUE(backend_gone(pid));
}

TEST_F(pg_fenced_deadline,
       lease_run_fenced_on_a_frozen_backend_ends_by_the_local_deadline_plus_grace) {
    pq_backend db{env_options("deadline-holder")};
    lease_options o;
    o.ttl = 2s; // nobody renews it
    lease l{db, m_name, o};
    ASSERT_TRUE(l.acquire());
    const auto local_deadline = l.deadline();
    const auto bound = local_deadline + fenced_grace + cut_grace;
    pqxx::connection app{"application_name=deadline-lease"};
    const int pid = app.backendpid();

    std::optional<frozen_backend> frozen;
    bool froze = false;
    const auto start = steady::now();
    try {
        l.run_fenced(app, [&](pqxx::transaction_base& tx) {
            pqxx_compat::exec0(tx, insert("lease"));
            frozen.emplace(pid);
            froze = frozen->stopped();
            tx.exec("SELECT 1");
        });
        ADD_FAILURE() << "the transaction on a frozen backend returned";
    } catch (const lease_lost& e) {
        std::cout << "[ info ] "
                  << (dynamic_cast<const lease_evicted*>(&e) ? "lease_evicted" : "lease_lost")
                  << " after " << since(start).count() << " ms: " << e.what() << "\n";
    } catch (const std::exception& e) {
        ADD_FAILURE() << "unexpected exception: " << e.what();
    }
    const auto returned = steady::now();
    frozen.reset();
    ASSERT_TRUE(froze) << "could not SIGSTOP the backend";
    EXPECT_LT(returned, bound + slack)
        << "returned " << std::chrono::duration_cast<ms>(returned - bound).count()
        << " ms after the stated bound";
    EXPECT_GE(returned, local_deadline + fenced_grace - 50ms); // not cut before its bound
    EXPECT_FALSE(l.held());
    EXPECT_TRUE(backend_gone(pid));
    EXPECT_EQ(rows(), 0);
}

TEST_F(pg_fenced_deadline, renewals_move_the_bound_of_a_long_fenced_transaction) {
    pq_backend db{env_options("deadline-holder")};
    lease_options o;
    o.ttl = 2s;
    lease l{db, m_name, o};
    ASSERT_TRUE(l.acquire());
    std::atomic<bool> done{false};
    std::thread renewer{[&] {
        while (!done) {
            std::this_thread::sleep_for(300ms);
            try {
                (void)l.renew();
            } catch (const std::exception&) {
                // The next turn tries again.
            }
        }
    }};
    pqxx::connection app{""};
    const auto start = steady::now();
    try {
        // Runs past the first bound (local deadline + 1 s, about 2.8 s).
        l.run_fenced(app, [&](pqxx::transaction_base& tx) {
            pqxx_compat::exec0(tx, insert("long"));
            tx.exec("SELECT pg_sleep(4)");
        });
    } catch (const std::exception& e) {
        ADD_FAILURE() << "a fenced transaction of a renewed lease was cut: " << e.what();
    }
    done = true;
    renewer.join();
    EXPECT_GE(since(start), 4s);
    EXPECT_EQ(rows(), 1);
}

} // namespace
} // namespace pglease::test
