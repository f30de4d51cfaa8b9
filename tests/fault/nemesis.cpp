/// @file nemesis.cpp
/// @brief Fault injections, each verified to have bitten.
#include "nemesis.hpp"

#include "common.hpp"
#include "worker.hpp"

#include <pqxx/pqxx>

#include <signal.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fault {
namespace {

/// The identity holding a valid grant of @p lease now ("" if none or unknown).
std::string valid_holder(phase& ph, const std::string& lease) {
    try {
        pqxx::connection c{ph.primary().conninfo()};
        pqxx::nontransaction tx{c};
        auto r = tx.exec_params("SELECT holder FROM lease_status WHERE name = $1 AND valid", lease);
        if (!r.empty() && !r[0][0].is_null())
            return r[0][0].as<std::string>();
    } catch (const std::exception&) {
    }
    return {};
}

bool same_process(const std::string& identity, const std::string& label) {
    return identity.substr(0, identity.find('.')) == label;
}

/// Waits up to @p timeout_ms until @p pid is stopped (state T).
bool wait_stopped(int pid, int timeout_ms) {
    const auto end = mono_ns() + std::int64_t{timeout_ms} * 1000000;
    while (mono_ns() < end) {
        std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
        std::string line;
        std::getline(in, line);
        const auto p = line.rfind(')');
        if (p != std::string::npos && p + 2 < line.size() &&
            (line[p + 2] == 'T' || line[p + 2] == 't'))
            return true;
        sleep_ms(5);
    }
    return false;
}

std::string times(double m) {
    std::ostringstream d;
    d << m << "x ttl";
    return d.str();
}

} // namespace

bool inject_pause(phase& ph, const std::string& lease, double mult) {
    if (ph.disabled("pause"))
        return false;
    auto l = ph.wait_leader(lease, 5000);
    if (!l)
        return false;
    const auto t = mono_ns();
    kill(l->pid, SIGSTOP);
    // Stopped, it cannot release: if the grant is still its own now, the
    // process that led is the one paused.
    const bool hit = same_process(valid_holder(ph, lease), l->label);
    if (hit)
        settle(static_cast<int>(mult * ph.m_s.ttl_ms));
    kill(l->pid, SIGCONT);
    if (hit)
        ph.record({"pause", lease, t, mono_ns(), times(mult), l->label, false, 0});
    return hit;
}

bool inject_kill(phase& ph, const std::string& lease, bool storm, const std::string& kind) {
    if (ph.disabled(kind))
        return false;
    auto l = ph.wait_leader(lease, 5000);
    if (!l)
        return false;
    const auto t = mono_ns();
    kill(l->pid, SIGKILL);
    const bool hit = same_process(valid_holder(ph, lease), l->label);
    ph.replace(l->pid, storm);
    if (hit)
        ph.record({kind, lease, t, t, "", l->label, false, 0});
    return hit;
}

bool inject_terminate(phase& ph, const std::string& lease, const std::string& aim) {
    const bool renew = aim == "renew";
    const std::string kind = renew ? "terminate-renew" : "terminate-write";
    if (ph.disabled(kind))
        return false;
    auto l = ph.wait_leader(lease, 5000);
    if (!l)
        return false;
    const std::string app = l->label + (renew ? "-renew" : "-write");
    try {
        pqxx::connection c{ph.primary().conninfo()};
        pqxx::nontransaction tx{c};
        const auto end = mono_ns() + 1500000000LL;
        std::string hit;
        int pid = 0;
        while (mono_ns() < end) {
            auto r = tx.exec_params(
                "SELECT pid, state, query FROM pg_stat_activity WHERE application_name = $1", app);
            if (!r.empty()) {
                pid = r[0][0].as<int>();
                const auto state = r[0][1].is_null() ? "" : r[0][1].as<std::string>();
                const auto query = r[0][2].is_null() ? "" : r[0][2].as<std::string>();
                std::string where = state;
                if (state == "active")
                    where = renew                           ? "mid-renew"
                            : query.rfind("COMMIT", 0) == 0 ? "at-commit"
                                                            : "mid-write";
                hit = where;
                if ((renew && where == "mid-renew") || where == aim)
                    break;
            }
        }
        if (pid == 0)
            return false;
        const auto t = mono_ns();
        auto r = tx.exec_params("SELECT pg_terminate_backend($1)", pid);
        // A leader's backend: the process still held the grant after it.
        if (!r[0][0].as<bool>() || !same_process(valid_holder(ph, lease), l->label))
            return false;
        ph.record({kind, lease, t, t, hit, l->label, false, 0});
        return true;
    } catch (const std::exception& e) {
        std::cerr << "terminate: " << e.what() << std::endl;
        return false;
    }
}

namespace {
std::string postmaster_start(cluster& n) {
    try {
        pqxx::connection c{n.conninfo()};
        pqxx::nontransaction tx{c};
        return tx.exec("SELECT pg_postmaster_start_time()::text")[0][0].as<std::string>();
    } catch (const std::exception&) {
        return {};
    }
}
} // namespace

bool inject_crash(phase& ph) {
    if (ph.disabled("crash"))
        return false;
    const std::string before = postmaster_start(ph.primary());
    const auto t = mono_ns();
    ph.primary().stop("immediate");
    settle(ph.uniform(0, 300));
    ph.primary().start(false);
    const std::string after = postmaster_start(ph.primary());
    if (before.empty() || after.empty() || before == after)
        return false; // not verifiably restarted
    ph.record({"crash", "", t, mono_ns(), "", "", true, 0});
    return true;
}

bool inject_clock(phase& ph, int& server_offset, int step) {
    const std::string kind = step > 0 ? "clock-forward" : "clock-back";
    if (ph.disabled(kind))
        return false;
    const int target = server_offset + step;
    const auto t = mono_ns();
    ph.primary().set_clock_offset(target);
    {
        const std::string tmp = ph.dir() + "/worker_clock.tmp";
        {
            std::ofstream out{tmp};
            out << (target > 0 ? "-" : "+") << std::abs(target) << "\n";
        }
        std::rename(tmp.c_str(), (ph.dir() + "/worker_clock").c_str());
    }
    // Seen by the server: its clock_timestamp() against this host's clock.
    double seen = NAN;
    const auto end = mono_ns() + 3000000000LL;
    while (mono_ns() < end && !interrupted()) {
        try {
            pqxx::connection c{ph.primary().conninfo()};
            pqxx::nontransaction tx{c};
            const std::int64_t before = wall_ns();
            const double server =
                tx.exec("SELECT extract(epoch FROM clock_timestamp())")[0][0].as<double>();
            const std::int64_t after = wall_ns();
            seen = server - static_cast<double>(before + after) / 2e9;
            if (std::abs(seen - target) < 0.3)
                break;
        } catch (const std::exception&) {
        }
        sleep_ms(20);
    }
    server_offset = target;
    if (!(std::abs(seen - target) < 0.3)) {
        std::cerr << "clock: server offset " << seen << " s, expected " << target << " s\n";
        return false;
    }
    std::ostringstream d;
    d << (step > 0 ? "+" : "") << step << "s";
    const std::int64_t allow = step < 0 ? std::int64_t{-step} * 1000 : 0;
    ph.record({kind, "", t, mono_ns(), d.str(), "", false, allow});
    return true;
}

bool inject_pause_in_txn(phase& ph, const std::string& lease, const std::string& mode,
                         double mult) {
    if (ph.disabled("pause-in-txn"))
        return false;
    auto l = ph.wait_leader(lease, 5000);
    if (!l)
        return false;
    kill(l->pid, mode == "idle" ? stall_idle_signal() : stall_busy_signal());
    if (!wait_stopped(l->pid, 3000))
        return false; // its next transaction did not reach the hook
    const auto t = mono_ns();
    bool hit = false;
    std::string state;
    try {
        pqxx::connection c{ph.primary().conninfo()};
        pqxx::nontransaction tx{c};
        auto r = tx.exec_params("SELECT state, query, backend_xid IS NOT NULL "
                                "FROM pg_stat_activity WHERE application_name = $1",
                                l->label + "-write");
        if (!r.empty() && !r[0][0].is_null()) {
            state = r[0][0].as<std::string>();
            const bool wrote = r[0][2].as<bool>();
            hit = wrote && same_process(valid_holder(ph, lease), l->label) &&
                  (mode == "idle" ? state == "idle in transaction"
                                  : state == "active" && r[0][1].as<std::string>().find(
                                                             "pg_sleep") != std::string::npos);
        }
    } catch (const std::exception&) {
    }
    if (hit)
        settle(static_cast<int>(mult * ph.m_s.ttl_ms));
    kill(l->pid, SIGCONT);
    if (hit)
        ph.record(
            {"pause-in-txn", lease, t, mono_ns(), mode + " " + times(mult), l->label, false, 0});
    else
        std::cerr << "pause-in-txn: " << l->label << " stopped, backend " << state << "\n";
    return hit;
}

bool inject_long_txn(phase& ph, const std::string& lease) {
    if (ph.disabled("long-txn"))
        return false;
    auto l = ph.wait_leader(lease, 5000);
    if (!l)
        return false;
    const auto t = mono_ns();
    kill(l->pid, long_txn_signal());
    // Verified when its backend runs the long statement while it leads.
    const auto end = mono_ns() + 2000000000LL;
    while (mono_ns() < end && !interrupted()) {
        try {
            pqxx::connection c{ph.primary().conninfo()};
            pqxx::nontransaction tx{c};
            auto r = tx.exec_params("SELECT 1 FROM pg_stat_activity WHERE application_name = $1 "
                                    "AND state = 'active' AND query LIKE 'SELECT pg_sleep(2.5%'",
                                    l->label + "-write");
            if (!r.empty() && same_process(valid_holder(ph, lease), l->label)) {
                ph.record({"long-txn", lease, t, t + std::int64_t{ph.m_s.ttl_ms} * 2500000,
                           "2.5x ttl", l->label, false, 0});
                return true;
            }
        } catch (const std::exception&) {
        }
        sleep_ms(20);
    }
    return false;
}

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
