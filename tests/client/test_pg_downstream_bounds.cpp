// Downstream fences against two real clusters (tests/client/downstream.sh):
// the bounds of a term-start raise. A downstream that accepts connections
// but never answers, and one whose raise waits on an old writer, refuse the
// term by the grant's local deadline, and the server stops waiting then
// too; the store id is read once per connection.
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
#include <mutex>
#include <string>
#include <thread>

namespace {

using namespace downstream_test;

/// A loopback port that accepts TCP and never answers: a stalled server.
class silent_server {
public:
    silent_server() {
        m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (m_fd < 0 || ::bind(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
            ::listen(m_fd, 8) != 0)
            throw std::runtime_error{"silent_server: no loopback listener"};
        m_port = ntohs(a.sin_port);
    }
    ~silent_server() { ::close(m_fd); }
    silent_server(const silent_server&) = delete;
    silent_server& operator=(const silent_server&) = delete;
    silent_server(silent_server&&) = delete;
    silent_server& operator=(silent_server&&) = delete;

    [[nodiscard]] int port() const noexcept { return m_port; }

private:
    int m_fd = -1;
    int m_port = 0;
};

/// Runs an elector over @p cfg until its first refused term (at most
/// @p within); the time that took and what it reported.
struct refusal {
    std::chrono::steady_clock::duration took{};
    std::int64_t epoch = 0;
    std::string why;
    int started = 0;
};
refusal first_refusal(pglease::elector_config cfg, std::chrono::seconds within) {
    std::mutex m;
    std::condition_variable cv;
    refusal r;
    std::atomic<int> started{0};
    cfg.callbacks.on_started_leading = [&](std::int64_t, const pglease::stop_token&) { ++started; };
    cfg.callbacks.on_stopped_leading = [] {};
    cfg.callbacks.on_term_refused = [&](std::int64_t e, const std::string& w) {
        const std::lock_guard lock{m};
        if (r.epoch == 0) {
            r.epoch = e;
            r.why = w;
        }
        cv.notify_all();
    };
    pglease::elector el{cfg};
    const auto t0 = std::chrono::steady_clock::now();
    el.start();
    {
        std::unique_lock lock{m};
        if (cv.wait_for(lock, within, [&] { return r.epoch != 0; }))
            r.took = std::chrono::steady_clock::now() - t0;
    }
    el.stop();
    r.started = started.load();
    return r;
}

TEST(Downstream, AStalledDownstreamRefusesTheTermByTheLocalDeadline) {
    // The downstream accepts TCP and never answers; its conninfo allows a
    // 10 s connect, but the connect ends with the grant's local deadline
    // (ttl 4 s - margin 0.4 s after the acquire was sent).
    const silent_server stalled;
    const std::string lease = unique("ds_stalled");
    const auto r =
        first_refusal(config_for(lease, "host=127.0.0.1 port=" + std::to_string(stalled.port()) +
                                            " user=x dbname=x connect_timeout=10"),
                      15s);
    ASSERT_NE(r.epoch, 0) << "no refused term within 15 s";
    EXPECT_GE(r.took, 3s) << r.why;
    EXPECT_LT(r.took, 5500ms) << "not bounded by the local deadline: " << r.why;
    EXPECT_NE(r.why.find("downstream 1 of 1"), std::string::npos) << r.why;
    EXPECT_NE(r.why.find("no connection by the caller's deadline"), std::string::npos) << r.why;
    EXPECT_EQ(r.started, 0);
    pqxx::connection c{env("PGLEASE_STORE")};
    pqxx::nontransaction tx{c};
    EXPECT_EQ(pglease::pqxx_compat::exec_params(
                  tx,
                  "SELECT count(*) FROM lease_events WHERE name = $1 AND epoch = $2 "
                  "AND event = 'released'",
                  lease, r.epoch)[0][0]
                  .as<int>(),
              1)
        << "the refused grant was not released at once";
}

TEST(Downstream, ARaiseCutOffAtTheDeadlineStopsOnTheServerToo) {
    // An old writer holds a fenced transaction open downstream, and the
    // downstream lets a raise wait 30 s for it (pg_lease.takeover_timeout):
    // the raise outlives the grant's local deadline, so the term is
    // refused; the server then stops waiting too (statement_timeout to the
    // deadline), so it neither ends the old writer nor holds its connection.
    const std::string lease = unique("ds_cutoff"), table = unique("ds_cutoff_t");
    make_downstream_table(table, lease);
    old_leader old{lease};
    ASSERT_TRUE(old.grant.acquire());
    const pglease::fence_token old_token = old.token();
    pqxx::connection writer{env("PGLEASE_DOWNSTREAM")};
    pqxx::work open_tx{writer};
    // the token named for the lease (1.5: only a named token raises a floor)
    open_tx.exec("SELECT lease_use(" + open_tx.quote(lease) + ", " +
                 std::to_string(old.grant.epoch()) + ")");
    open_tx.exec("INSERT INTO " + table + " VALUES (1, NULL)"); // raises the floor to the old epoch
    std::this_thread::sleep_for(1200ms);                        // the old grant expires

    auto cfg = config_for(lease, env("PGLEASE_DOWNSTREAM") +
                                     " options='-c pg_lease.takeover_timeout=30s'");
    const auto r = first_refusal(cfg, 15s);
    ASSERT_NE(r.epoch, 0) << "no refused term within 15 s";
    EXPECT_LT(r.took, 5500ms) << r.why;
    // Ended by the server's own statement_timeout (set to the deadline, a
    // little before it), not only by the client's cancel.
    EXPECT_NE(r.why.find("lease_raise: ERROR:  canceling statement due to statement timeout"),
              std::string::npos)
        << r.why;
    EXPECT_EQ(r.started, 0);

    pqxx::connection look{env("PGLEASE_DOWNSTREAM")};
    const auto raising = [&] {
        pqxx::nontransaction tx{look};
        return tx
            .exec("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query "
                  "LIKE '%lease_raise(%' AND pid <> pg_backend_pid()")[0][0]
            .as<int>();
    };
    EXPECT_TRUE(eventually([&] { return raising() == 0; }, 2s))
        << "a lease_raise is still running downstream after the term was refused";
    // The old writer was not ended, and its token is still the floor.
    open_tx.exec("INSERT INTO " + table + " VALUES (2, NULL)");
    open_tx.commit();
    EXPECT_EQ(floor_of(lease), old.grant.epoch());
}

TEST(Downstream, TheStoreIdIsReadOncePerConnection) {
    pglease::connection_options o;
    o.conninfo = env("PGLEASE_STORE");
    pglease::pq_backend store{o};
    const auto far = std::chrono::steady_clock::now() + 10s;
    const std::string id = store.store_id(far);
    EXPECT_EQ(id, store_id());
    const auto last_query = [](int pid) {
        pqxx::connection c{env("PGLEASE_STORE")};
        pqxx::nontransaction tx{c};
        return pglease::pqxx_compat::exec_params(
                   tx, "SELECT query FROM pg_stat_activity WHERE pid = $1", pid)[0][0]
            .as<std::string>();
    };
    (void)store.status("ds_store_id_probe"); // another statement on the same session
    const int pid = store.server_pid();
    EXPECT_EQ(store.store_id(far), id);
    EXPECT_EQ(last_query(pid).find("lease_store_id"), std::string::npos)
        << "the second store_id() went to the server";

    // A new connection reads it again.
    {
        pqxx::connection c{env("PGLEASE_STORE")};
        pglease::test::terminate_backend(c, pid);
    }
    EXPECT_THROW((void)store.status("ds_store_id_probe"), pglease::connection_lost);
    EXPECT_EQ(store.store_id(far), id);
    EXPECT_NE(store.server_pid(), pid);
    EXPECT_NE(last_query(store.server_pid()).find("lease_store_id"), std::string::npos);
}

} // namespace
