// Against a server whose synchronous standby never answers
// (synchronous_standby_names = 'nobody'; tests/client/syncrep.sh starts
// one): a COMMIT whose wait for the standby is cancelled is committed
// locally and reported by PostgreSQL as a success with a WARNING. Neither
// run_fenced() nor a lease call may take that for an acknowledgment: both
// report commit_unknown (patroni#1412: a failover can lose such commits).
#include "pglease/internal/pqxx_compat.hpp"
#include <pglease/pglease.hpp>
#include <pqxx/pqxx>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;

std::string unique(const char* prefix) {
    return std::string{prefix} + "_" + std::to_string(::getpid()) + "_" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

/// Cancels backend @p pid after @p delay, from a connection of its own, as
/// pg_cancel_backend() or a client's cancel request would (statement_timeout
/// does not: it is disarmed before the commit of the statement).
std::thread cancel_after(int pid, std::chrono::milliseconds delay) {
    return std::thread{[pid, delay] {
        std::this_thread::sleep_for(delay);
        pqxx::connection c{""};
        pqxx::nontransaction tx{c};
        tx.exec("SELECT pg_cancel_backend(" + std::to_string(pid) + ")");
    }};
}

/// lease_acquire(@p lease, @p holder, 1 min) on @p admin, committed by
/// cancelling its wait for the standby (pg_lease raises synchronous_commit
/// for its own grants): committed locally, maybe never replicated.
std::int64_t grant_not_replicated(pqxx::connection& admin, const std::string& lease,
                                  const std::string& holder) {
    auto canceller = cancel_after(admin.backendpid(), 300ms);
    pqxx::nontransaction tx{admin};
    const auto epoch = pglease::pqxx_compat::exec1(tx, "SELECT epoch FROM lease_acquire('" + lease +
                                                           "', '" + holder + "', '1 min')")[0]
                           .as<std::int64_t>();
    canceller.join();
    return epoch;
}

/// A session whose calls are cut at 300 ms: a commit still waiting for the
/// standby then has its wait cancelled.
std::shared_ptr<pglease::pq_backend> backend_cut_at_300ms() {
    pglease::connection_options o;
    o.conninfo = "";
    o.call_timeout = 300ms;
    o.acquire_timeout = 300ms;
    return std::make_shared<pglease::pq_backend>(o);
}

pglease::lease_options holder_options(const char* identity, std::chrono::milliseconds ttl) {
    pglease::lease_options lo;
    lo.identity = identity;
    lo.ttl = ttl;
    return lo;
}

TEST(SyncRep, ServerWaitsForAStandbyThatNeverAnswers) {
    pqxx::connection c{""};
    pqxx::nontransaction tx{c};
    EXPECT_EQ(
        pglease::pqxx_compat::exec1(tx, "SHOW synchronous_standby_names")[0].as<std::string>(),
        "nobody");
}

TEST(SyncRep, FencedCommitWhoseWaitWasCancelledIsCommitUnknown) {
    const std::string lease = unique("syncrep"), table = unique("syncrep_t");
    pqxx::connection admin{""};
    {
        pqxx::nontransaction tx{admin};
        // Setup without waiting for the standby that never comes.
        tx.exec("SET synchronous_commit = local");
        tx.exec("CREATE TABLE " + table + " (id int, epoch bigint)");
        tx.exec("SELECT lease_fence('" + table + "', '" + lease + "')");
    }
    const std::int64_t epoch = grant_not_replicated(admin, lease, "me");
    ASSERT_GT(epoch, 0);

    pqxx::connection app{""};
    auto canceller = cancel_after(app.backendpid(), 300ms); // cancels the COMMIT's wait
    EXPECT_THROW(pglease::run_fenced(app, {lease, epoch, {}},
                                     [&](pqxx::work& tx) {
                                         tx.exec("INSERT INTO " + table + " VALUES (1, " +
                                                 std::to_string(epoch) + ")");
                                     }),
                 pglease::commit_unknown);
    canceller.join();
    // It did commit locally: that is why it is "unknown", not "failed".
    pqxx::nontransaction check{admin};
    EXPECT_EQ(pglease::pqxx_compat::exec1(check, "SELECT count(*) FROM " + table)[0].as<int>(), 1);
}

// The same through the one-round-trip form (fenced_work: BEGIN and
// lease_use in one query), with a timeout that does not come into play.
TEST(SyncRep, FastFencedCommitWhoseWaitWasCancelledIsCommitUnknown) {
    const std::string lease = unique("syncrep_fast"), table = unique("syncrep_fast_t");
    pqxx::connection admin{""};
    {
        pqxx::nontransaction tx{admin};
        tx.exec("SET synchronous_commit = local");
        tx.exec("CREATE TABLE " + table + " (id int, epoch bigint)");
        tx.exec("SELECT lease_fence('" + table + "', '" + lease + "')");
    }
    const std::int64_t epoch = grant_not_replicated(admin, lease, "me");
    ASSERT_GT(epoch, 0);

    pqxx::connection app{""};
    auto canceller = cancel_after(app.backendpid(), 300ms);
    EXPECT_THROW(pglease::run_fenced(
                     app, {lease, epoch, {}},
                     [&](pqxx::transaction_base& tx) {
                         tx.exec("INSERT INTO " + table + " VALUES (1, " + std::to_string(epoch) +
                                 ")");
                     },
                     30s),
                 pglease::commit_unknown);
    canceller.join();
    pqxx::nontransaction check{admin};
    EXPECT_EQ(pglease::pqxx_compat::exec1(check, "SELECT count(*) FROM " + table)[0].as<int>(), 1);
}

TEST(SyncRep, LeaseCallAnsweredAfterItsCancelIsNotAGrant) {
    auto db = backend_cut_at_300ms();
    pglease::lease l{*db, unique("syncrep_l"), holder_options("syncrep-client", 5s)};
    EXPECT_THROW((void)l.acquire(), pglease::commit_unknown);
    EXPECT_FALSE(l.held());
}

// A handover committed by cancelling its wait for the standby is seen by
// others, yet a failover could lose it. The successor, told of it by
// NOTIFY, must not take it from a read (status_if_durable: nothing where a
// synchronous standby is set): it acquires, a write that waits for the
// standby itself, and is not a grant when that wait is cut.
TEST(SyncRep, AHandoverSeenBeforeItIsReplicatedIsNotTakenFromARead) {
    const std::string name = unique("syncrep_handover");
    pqxx::connection admin{""};
    const std::int64_t epoch = grant_not_replicated(admin, name, "old");
    ASSERT_GT(epoch, 0);

    auto db = backend_cut_at_300ms();
    pglease::lease successor{*db, name, holder_options("syncrep-successor", 30s)};
    ASSERT_TRUE(db->listen());
    {
        auto canceller = cancel_after(admin.backendpid(), 300ms);
        pqxx::nontransaction tx{admin};
        // Read in the one expression: libpqxx 8's field is a reference
        // into its row, which does not outlive the statement.
        const bool handed = !pglease::pqxx_compat::exec1(
                                 tx, "SELECT lease_handover('" + name + "', 'old', " +
                                         std::to_string(epoch) + ", 'syncrep-successor')")[0]
                                 .is_null();
        canceller.join();
        ASSERT_TRUE(handed);
    }
    // The NOTIFY came: the hint is there, as it would be without a standby.
    bool told = false;
    for (int i = 0; i < 20 && !told; ++i)
        told = db->wait_for_change(name, std::chrono::steady_clock::now() + 100ms);
    ASSERT_TRUE(told);
    EXPECT_THROW((void)successor.acquire(), pglease::commit_unknown);
    EXPECT_FALSE(successor.held());
}

} // namespace
