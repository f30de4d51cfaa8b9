/// @file failover.cpp
/// @brief The failover nemesis: primary killed, standby promoted, a new
/// standby rebuilt; for asynchronous replication, verified to have lost
/// a grant and acknowledged writes.
#include "common.hpp"
#include "nemesis.hpp"

#include <pqxx/pqxx>

#include <signal.h>

#include <iostream>
#include <optional>

namespace fault {

void wait_replication(phase& ph, bool sync) {
    const auto end = mono_ns() + 60000000000LL;
    while (mono_ns() < end && !interrupted()) {
        try {
            pqxx::connection c{ph.primary().conninfo()};
            pqxx::nontransaction tx{c};
            auto r = tx.exec("SELECT sync_state, flush_lsn >= pg_current_wal_lsn() "
                             "FROM pg_stat_replication WHERE state = 'streaming'");
            if (!r.empty() && (!sync || r[0][0].as<std::string>() == "sync") &&
                !r[0][1].is_null() && r[0][1].as<bool>())
                return;
        } catch (const std::exception&) {
        }
        sleep_ms(50);
    }
}

namespace {

std::int64_t count(cluster& n, const std::string& sql) {
    pqxx::connection c{n.conninfo()};
    pqxx::nontransaction tx{c};
    return tx.exec(sql)[0][0].as<std::int64_t>();
}

/// Waits until @p n accepts connections.
void wait_up(cluster& n, int timeout_ms) {
    const auto end = mono_ns() + std::int64_t{timeout_ms} * 1000000;
    while (mono_ns() < end && !interrupted()) {
        try {
            pqxx::connection c{n.conninfo()};
            return;
        } catch (const std::exception&) {
        }
        sleep_ms(50);
    }
}

/// Async only: stops the standby's WAL receiver, makes the old primary
/// grant a new epoch (kills the leader) and acknowledge writes of it, and
/// returns (the new epoch, fenced rows on the old primary), or nothing
/// when that did not happen; the WAL receiver's pid in @p receiver.
std::optional<std::pair<std::int64_t, std::int64_t>> diverge(phase& ph, cluster& standby,
                                                             int& receiver) {
    receiver = static_cast<int>(count(standby, "SELECT coalesce(max(pid), 0) FROM "
                                               "pg_stat_wal_receiver WHERE status = 'streaming'"));
    if (receiver == 0)
        return std::nullopt;
    kill(receiver, SIGSTOP);
    auto l = ph.wait_leader("l0", 5000);
    if (!l)
        return std::nullopt;
    const auto t = mono_ns();
    kill(l->pid, SIGKILL);
    ph.replace(l->pid, false);
    ph.record({"kill", "l0", t, t, "before failover", l->label, false, 0});
    const auto end = mono_ns() + 8000000000LL;
    while (mono_ns() < end && !interrupted()) {
        auto n = ph.leader("l0");
        if (n && n->epoch != l->epoch &&
            count(ph.primary(),
                  "SELECT count(*) FROM fw_l0 WHERE epoch = " + std::to_string(n->epoch)) >= 3)
            return std::make_pair(n->epoch, count(ph.primary(), "SELECT count(*) FROM fw_l0"));
        sleep_ms(50);
    }
    return std::nullopt;
}

} // namespace

bool inject_failover(phase& ph, bool sync) {
    const std::string kind = sync ? "failover-sync" : "failover-async";
    auto& nodes = ph.nodes();
    const int old_p = ph.primary_index();
    const int new_p = 1 - old_p;
    auto& op = *nodes[static_cast<std::size_t>(old_p)];
    auto& np = *nodes[static_cast<std::size_t>(new_p)];
    if (ph.disabled(kind))
        return false;
    int receiver = 0;
    std::optional<std::pair<std::int64_t, std::int64_t>> diverged;
    if (!sync) {
        try {
            diverged = diverge(ph, np, receiver);
        } catch (const std::exception& e) {
            std::cerr << "failover: " << e.what() << std::endl;
        }
    }
    const auto t = mono_ns();
    op.stop("immediate");
    if (receiver > 0) {
        // What it received but did not write is lost with it (the standby
        // restarts after a crash of its WAL receiver).
        kill(receiver, SIGKILL);
        kill(receiver, SIGCONT);
        sleep_ms(200);
        wait_up(np, 30000);
    }
    if (sync) // no standby yet: commits would wait for one
        np.configure("synchronous_standby_names = ''", false);
    np.promote();
    ph.set_primary(new_p);
    if (sync)
        np.configure("synchronous_standby_names = ''", true);
    const auto up = mono_ns();
    bool effective = false;
    std::string detail;
    try {
        effective = count(np, "SELECT (NOT pg_is_in_recovery())::int") == 1;
        if (!sync) {
            const std::int64_t grants =
                diverged ? count(np, "SELECT count(*) FROM lease_events WHERE epoch = " +
                                         std::to_string(diverged->first))
                         : -1;
            const std::int64_t rows = count(np, "SELECT count(*) FROM fw_l0");
            effective = effective && diverged && grants == 0 && rows < diverged->second;
            detail = diverged ? "missed epoch " + std::to_string(diverged->first) + " and " +
                                    std::to_string(diverged->second - rows) + " fenced rows"
                              : "standby not behind";
        }
    } catch (const std::exception& e) {
        std::cerr << "failover: " << e.what() << std::endl;
        effective = false;
    }
    op.wipe();
    op.basebackup_from(np, {"port = " + std::to_string(op.port())});
    op.start();
    if (sync)
        np.configure("synchronous_standby_names = '*'", true);
    wait_replication(ph, sync);
    if (effective)
        ph.record({kind, "", t, up, detail, "", true, 0});
    else
        std::cerr << kind << ": not effective (" << detail << ")\n";
    return effective;
}

} // namespace fault
