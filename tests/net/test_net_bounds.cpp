/// @file test_net_bounds.cpp
/// @brief Every client call bounded when the network drops every packet
/// (issue 38, item 3). Runs inside a host of its own (tests/net/bounds.sh:
/// a network namespace whose only link leads to the server), which it cuts
/// itself with nftables after its sessions are up: sockets stay open and
/// silent, so neither the statement nor its cancel request nor a new
/// connect ever hears back. Each call must return (fail) by its bound:
/// the caller's deadline, call_timeout or acquire_timeout, plus the
/// watchdog's grace for the cancel (200 ms) and the severing after it.
/// The kernel's own limits (tcp_user_timeout, keepalives), which the client
/// also sets from call_timeout, are pushed out of reach here, so each test
/// shows the bound the client keeps by itself.
#include "net_host.hpp"
#include "pglease/error.hpp"
#include "pglease/fence.hpp"
#include "pglease/lease.hpp"
#include "pglease/pq_backend.hpp"

#include <pqxx/pqxx>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

using pglease_test::net_conninfo;
using cut = pglease_test::host_cut;

/// The time @p call took to fail (it must throw pglease::error). A call
/// still blocked a minute later ends the whole binary (a failure), so an
/// unbounded call fails the suite instead of hanging it.
steady::duration time_to_fail(const std::function<void()>& call) {
    const auto t0 = steady::now();
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::thread stopper{[&] {
        std::unique_lock lock{mu};
        if (!cv.wait_for(lock, 60s, [&] { return done; })) {
            std::cerr << "the call was still blocked after 60 s: unbounded\n";
            std::_Exit(1);
        }
    }};
    EXPECT_THROW(call(), pglease::error);
    {
        const std::lock_guard lock{mu};
        done = true;
    }
    cv.notify_one();
    stopper.join();
    const auto took = steady::now() - t0;
    std::cout << "  failed after "
              << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";
    return took;
}

/// The watchdog's grace for a cancel that cannot be sent, the severing
/// after it, and a loaded 2-core machine.
constexpr auto slack = 1s;

class net_bounds : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(net_conninfo().empty()) << "PGLEASE_NET_CONNINFO must name the server";
        // the kernel would wait ten minutes for an answer (or an ack)
        o.conninfo = net_conninfo() + " tcp_user_timeout=600000 keepalives=0";
        o.call_timeout = 1500ms;
        o.acquire_timeout = 2500ms;
        name =
            "net/" + std::string{::testing::UnitTest::GetInstance()->current_test_info()->name()};
        backend = std::make_unique<pglease::pq_backend>(o);
        // The session up, and the lease row there, before the cut (a
        // connect that a cut timed out leaves a backoff of up to a second
        // behind: wait it out).
        const auto until = steady::now() + 10s;
        for (;;) {
            try {
                const auto r = db().acquire(name, "me", 10s, steady::now() + 5s);
                ASSERT_TRUE(r.acquired);
                epoch = r.epoch;
                return;
            } catch (const pglease::connection_lost& e) {
                ASSERT_LT(steady::now(), until) << e.what();
                std::this_thread::sleep_for(100ms);
            }
        }
    }
    pglease::pq_backend& db() { return *backend; }
    pglease::connection_options o;
    std::unique_ptr<pglease::pq_backend> backend;
    std::string name;
    std::int64_t epoch = 0;
};

TEST_F(net_bounds, a_renew_ends_by_its_deadline) {
    const cut c;
    const auto took =
        time_to_fail([&] { (void)db().renew(name, "me", epoch, 10s, steady::now() + 700ms); });
    EXPECT_LT(took, 700ms + slack);
}

TEST_F(net_bounds, a_renew_without_a_deadline_ends_by_call_timeout) {
    const cut c;
    const auto took =
        time_to_fail([&] { (void)db().renew(name, "me", epoch, 10s, steady::time_point::max()); });
    EXPECT_LT(took, o.call_timeout + slack);
}

TEST_F(net_bounds, an_acquire_ends_by_acquire_timeout) {
    const cut c;
    const auto took = time_to_fail(
        [&] { (void)db().acquire(name + "/2", "me", 10s, steady::time_point::max()); });
    EXPECT_LT(took, o.acquire_timeout + slack);
}

TEST_F(net_bounds, a_release_on_the_way_out_ends_by_call_timeout) {
    const cut c;
    const auto took = time_to_fail([&] { (void)db().release(name, "me", epoch); });
    EXPECT_LT(took, o.call_timeout + slack);
}

TEST_F(net_bounds, a_handover_ends_by_call_timeout) {
    // yield_to(), a stop with a successor and `pglease run` handing over:
    // the old holder gives up by the bound like every other call.
    const cut c;
    const auto took = time_to_fail([&] { (void)db().handover(name, "me", epoch, "next"); });
    EXPECT_LT(took, o.call_timeout + slack);
}

TEST_F(net_bounds, a_status_read_ends_by_call_timeout) {
    const cut c;
    const auto took = time_to_fail([&] { (void)db().status(name); });
    EXPECT_LT(took, o.call_timeout + slack);
}

TEST_F(net_bounds, a_downstream_raise_ends_by_its_deadline) {
    const std::string store = db().store_id(steady::now() + 5s);
    const cut c;
    const auto took =
        time_to_fail([&] { (void)db().raise(store, name, epoch, steady::now() + 700ms); });
    EXPECT_LT(took, 700ms + slack);
}

TEST_F(net_bounds, a_new_connect_ends_by_the_callers_deadline) {
    pglease::pq_backend fresh{o}; // not connected yet: the connect itself meets the cut
    const cut c;
    const auto took =
        time_to_fail([&] { (void)fresh.renew(name, "me", epoch, 10s, steady::now() + 700ms); });
    EXPECT_LT(took, 700ms + slack);
}

TEST_F(net_bounds, a_fenced_transaction_ends_by_its_lease_deadline) {
    pglease::lease_options lo;
    lo.ttl = 3s;
    pglease::lease l{db(), name + "/fenced", lo};
    ASSERT_TRUE(l.acquire());
    pqxx::connection app{net_conninfo()};
    {
        pqxx::work tx{app};
        tx.exec0("CREATE TABLE IF NOT EXISTS net_t (v int)");
        tx.commit();
    }
    const auto deadline = l.deadline();
    const cut c;
    EXPECT_THROW(
        l.run_fenced(app,
                     [](pqxx::transaction_base& tx) { tx.exec0("INSERT INTO net_t VALUES (1)"); }),
        pglease::error);
    const auto past =
        std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - deadline);
    // It may run fenced_grace past the deadline (the server refuses it
    // there anyway), then it is cut.
    std::cout << "  ended " << past.count() << " ms after the local deadline\n";
    EXPECT_LT(past, pglease::fenced_grace + slack)
        << "the fenced transaction ended " << past.count()
        << " ms after its lease's local deadline";
}

} // namespace
