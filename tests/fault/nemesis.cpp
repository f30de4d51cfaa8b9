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

std::string valid_holder(phase& ph, const std::string& lease) {
    try {
        const auto r = ph.ask([&](pqxx::nontransaction& tx) {
            return tx.exec_params("SELECT holder FROM lease_status WHERE name = $1 AND valid",
                                  lease);
        });
        if (!r.empty() && !r[0][0].is_null())
            return r[0][0].as<std::string>();
    } catch (const std::exception&) {
    }
    return {};
}

bool same_process(const std::string& identity, const std::string& label) {
    return identity.substr(0, identity.find('.')) == label;
}

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
        ph.record({kind, lease, t, t, "", l->label, false, 0, l->epoch});
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
    // Under libfaketime again, or later clock steps would not reach it.
    ph.primary().start(ph.primary().faketime());
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

} // namespace fault
