// Downstream fences (extension 1.4) against two real clusters, the lease
// store and a downstream database (tests/client/downstream.sh starts both
// and names them in PGLEASE_STORE and PGLEASE_DOWNSTREAM): the elector
// raises the lease's floor downstream before on_started_leading; the old
// leader's transaction in flight there is ended and its later writes are
// refused (LS001), while run_fenced() on a downstream connection works
// unchanged for the new leader; an unreachable downstream refuses the term
// and the lease is released.
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

using namespace std::chrono_literals;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr)
        throw std::runtime_error{std::string{name} + " is not set: run tests/client/downstream.sh"};
    return v;
}

std::string unique(const char* prefix) {
    return std::string{prefix} + "_" + std::to_string(::getpid()) + "_" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

std::string store_id() {
    pqxx::connection c{env("PGLEASE_STORE")};
    pqxx::nontransaction tx{c};
    return tx.exec1("SELECT lease_store_id()")[0].as<std::string>();
}

/// A table in the downstream database fenced by @p lease of the store.
void make_downstream_table(const std::string& table, const std::string& lease) {
    pqxx::connection c{env("PGLEASE_DOWNSTREAM")};
    pqxx::nontransaction tx{c};
    tx.exec("CREATE TABLE " + table + " (id int, epoch bigint)");
    tx.exec("SELECT lease_fence(" + tx.quote(table) + ", " + tx.quote(lease) + ", store => " +
            tx.quote(store_id()) + ")");
}

std::int64_t floor_of(const std::string& lease) {
    pqxx::connection c{env("PGLEASE_DOWNSTREAM")};
    pqxx::nontransaction tx{c};
    const auto r = tx.exec_params("SELECT epoch FROM lease_floors WHERE store = $1 AND name = $2",
                                  store_id(), lease);
    return r.empty() ? 0 : r[0][0].as<std::int64_t>();
}

/// Waits up to @p timeout for @p pred, checking every 10 ms.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= end)
            return false;
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

pglease::elector_config config_for(const std::string& lease, const std::string& downstream) {
    pglease::elector_config c;
    c.lease_name = lease;
    c.ttl = 4s;
    c.renew_deadline = 2500ms;
    c.retry_period = 300ms;
    c.connection.conninfo = env("PGLEASE_STORE");
    pglease::connection_options d;
    d.conninfo = downstream;
    c.downstreams.push_back(d);
    return c;
}

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
    pglease::connection_options store_opts;
    store_opts.conninfo = env("PGLEASE_STORE");
    pglease::pq_backend old_db{store_opts};
    pglease::lease_options opts;
    opts.identity = "old-leader";
    opts.ttl = 1s;
    pglease::lease old{old_db, lease, opts};
    ASSERT_TRUE(old.acquire());
    const pglease::fence_token old_token{lease, old.epoch(), {}};
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
    EXPECT_EQ(tx.exec_params("SELECT count(*) FROM lease_events WHERE name = $1 AND epoch = $2 "
                             "AND event = 'released'",
                             lease, refused_epoch)[0][0]
                  .as<int>(),
              1);
    // It campaigns again every retry period (300 ms), not at every NOTIFY
    // of its own release: over 1.5 s, a handful of grants, not thousands.
    std::this_thread::sleep_for(1500ms);
    el.stop();
    EXPECT_EQ(started.load(), 0);
    const int grants = tx.exec_params("SELECT count(*) FROM lease_events WHERE name = $1 AND "
                                      "event = 'acquired'",
                                      lease)[0][0]
                           .as<int>();
    EXPECT_GE(grants, 2);
    EXPECT_LE(grants, 10);
}

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
    const auto r = first_refusal(
        config_for(lease, "host=127.0.0.1 port=" + std::to_string(stalled.port()) +
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
    EXPECT_EQ(tx.exec_params("SELECT count(*) FROM lease_events WHERE name = $1 AND epoch = $2 "
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
    pglease::connection_options store_opts;
    store_opts.conninfo = env("PGLEASE_STORE");
    pglease::pq_backend old_db{store_opts};
    pglease::lease_options opts;
    opts.identity = "old-leader";
    opts.ttl = 1s;
    pglease::lease old{old_db, lease, opts};
    ASSERT_TRUE(old.acquire());
    const pglease::fence_token old_token{lease, old.epoch(), {}};
    pqxx::connection writer{env("PGLEASE_DOWNSTREAM")};
    pqxx::work open_tx{writer};
    open_tx.exec("SET LOCAL pg_lease.epoch = '" + std::to_string(old.epoch()) + "'");
    open_tx.exec("INSERT INTO " + table + " VALUES (1, NULL)"); // raises the floor to the old epoch
    std::this_thread::sleep_for(1200ms); // the old grant expires

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
        return tx.exec("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query "
                       "LIKE '%lease_raise(%' AND pid <> pg_backend_pid()")[0][0]
            .as<int>();
    };
    EXPECT_TRUE(eventually([&] { return raising() == 0; }, 2s))
        << "a lease_raise is still running downstream after the term was refused";
    // The old writer was not ended, and its token is still the floor.
    open_tx.exec("INSERT INTO " + table + " VALUES (2, NULL)");
    open_tx.commit();
    EXPECT_EQ(floor_of(lease), old.epoch());
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
        return tx.exec_params("SELECT query FROM pg_stat_activity WHERE pid = $1", pid)[0][0]
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
        pqxx::nontransaction tx{c};
        tx.exec_params("SELECT pg_terminate_backend($1, 5000)", pid); // waits for it to exit
    }
    EXPECT_THROW((void)store.status("ds_store_id_probe"), pglease::connection_lost);
    EXPECT_EQ(store.store_id(far), id);
    EXPECT_NE(store.server_pid(), pid);
    EXPECT_NE(last_query(store.server_pid()).find("lease_store_id"), std::string::npos);
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
    EXPECT_NE(refused.refusal().find("downstream 2 of 2"), std::string::npos)
        << refused.refusal();
    pqxx::connection c{env("PGLEASE_STORE")};
    pqxx::nontransaction tx{c};
    const auto r = tx.exec_params("SELECT coalesce(holder, ''), (SELECT count(*) FROM lease_events "
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
    EXPECT_TRUE(down.raise(store_id(), lease, 5, far)); // already there
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
        pqxx::nontransaction tx{c};
        tx.exec_params("SELECT pg_terminate_backend($1, 5000)", pid); // waits for it to exit
    }
    // The next term's raise finds the session dead and raises on a new one.
    EXPECT_TRUE(down.raise(store_id(), lease, 6, far));
    EXPECT_NE(down.server_pid(), pid);
    EXPECT_EQ(floor_of(lease), 6);
}

} // namespace
