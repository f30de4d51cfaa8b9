/// @file profile.cpp
/// @brief The phases. Each phase injects its planned faults (an injection
/// that found no target is retried, up to twice the plan), then declares
/// its floors: every planned injection effective, and minimum grants,
/// acknowledged fenced transactions and stale writes refused.
#include "profile.hpp"

#include "calibrate.hpp"
#include "common.hpp"
#include "nemesis.hpp"
#include "phase.hpp"
#include "single_phase.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>

namespace fault {

plan make_plan(const settings& s) {
    plan p;
    if (s.profile != "soak")
        return p;
    // The long run's figures (issue 15): 250 pauses of 0.5-5 x ttl, 1,000
    // backend kills (pg_terminate_backend of a renew or a write), 100
    // crashes, clock steps up to +/-10 x ttl, 16 to 200 contenders. About an
    // hour on 2 cores, plus the mixed schedule's --duration.
    p.mixed_s = s.duration_s;
    p.pause = 250;
    p.netcut = 110; // the network phases alone: over an hour (issue 38)
    p.netslow = 110;
    p.netdown = 150;
    p.kill = 100;
    p.terminate = 500;
    p.crash = 100;
    p.clock = 40;
    p.clock_max_ttls = 10;
    p.pause_in_txn = 20;
    p.long_txn = 10;
    p.storm16_s = 60;
    p.storm64_s = 90;
    p.storm200_s = 180;
    p.pool_s = 60;
    p.failover_async = p.failover_sync = 10;
    p.downstream = 10;
    p.handover = 40;
    return p;
}

std::vector<phase_bundle> run_profile(const settings& s, const plan& p, std::mt19937& rng) {
    std::vector<phase_bundle> out;
    auto want = [&](const std::string& k) { return s.only.empty() || s.only.count(k) != 0; };
    auto run = [&](const std::string& k, auto&& fn) {
        if (!want(k) || interrupted())
            return;
        std::cout << "phase " << k << " ..." << std::endl;
        const auto t0 = mono_ns();
        out.push_back(fn());
        std::cout << "  " << k << " took " << (mono_ns() - t0) / 1000000000 << " s" << std::endl;
    };
    const int ttl = s.ttl_ms;

    if (p.mixed_s > 0)
        run("mixed", [&] {
            single d{"mixed", {}, {}, true, [&](phase& ph) {
                         const auto end = mono_ns() + std::int64_t{p.mixed_s} * 1000000000;
                         int offset = 0, i = 0;
                         static const double mult[] = {0.5, 1, 2, 5};
                         while (mono_ns() < end && !interrupted()) {
                             switch (ph.uniform(0, 6)) {
                             case 0:
                                 inject_pause(ph, "l0", mult[i % 4]);
                                 break;
                             case 1:
                                 inject_kill(ph, "l0", false, "kill");
                                 break;
                             case 2:
                                 inject_terminate(ph, "l0", "renew");
                                 break;
                             case 3:
                                 inject_terminate(ph, "l0",
                                                  ph.uniform(0, 1) ? "at-commit" : "mid-write");
                                 break;
                             case 4:
                                 inject_crash(ph);
                                 break;
                             case 5:
                                 inject_pause_in_txn(ph, "l0", i % 2 ? "idle" : "busy", 4);
                                 break;
                             default:
                                 inject_clock(ph, offset,
                                              offset != 0        ? -offset
                                              : ph.uniform(0, 1) ? 3
                                                                 : -3);
                             }
                             ++i;
                             settle(ttl + ph.uniform(0, 2 * ttl));
                         }
                         if (offset != 0)
                             inject_clock(ph, offset, -offset);
                     }};
            // Random kinds: floors on the work, scaled with the phase's length.
            d.floors = floors({}, p.mixed_s / 10, 5L * p.mixed_s, p.mixed_s >= 120 ? 1 : 0);
            return run_single(s, rng, d);
        });

    run("pause", [&] {
        static const double mult[] = {0.5, 1, 2, 5};
        return run_single(s, rng,
                          {"pause",
                           {{"pause", p.pause}},
                           floors({{"pause", p.pause}}, p.pause / 2, 100, 2),
                           false,
                           [&](phase& ph) {
                               until_effective(p.pause, [&](int i) {
                                   const bool hit = inject_pause(ph, "l0", mult[i % 4]);
                                   settle(ttl * 3 / 2 + ph.uniform(0, 500));
                                   return hit;
                               });
                           }});
    });
    // The network phases: n faults of each kind in turn, every fenced
    // transaction bounded by ttl/2 (B1), downstream writes on the links.
    auto net_phase = [&](const std::string& name, const std::vector<std::string>& kinds, int n,
                         const std::function<bool(phase&, int)>& inject) {
        std::map<std::string, int> each;
        for (const auto& k : kinds)
            each[k] = n;
        single d{name, each, floors(each, static_cast<long>(kinds.size()) * n, 100, 2), false,
                 [n, inject, ttl, kinds_n = static_cast<int>(kinds.size())](phase& ph) {
                     until_effective(kinds_n * n, [&](int i) {
                         const bool hit = inject(ph, i % kinds_n);
                         settle(ttl * 3 / 2 + ph.uniform(0, 500));
                         return hit;
                     });
                 }};
        d.downstream = true;
        d.write_bound_ms = ttl / 2;
        return d;
    };
    run("netcut", [&] {
        static const cut_way ways[] = {cut_way::both, cut_way::to_host, cut_way::from_host};
        single d = net_phase("netcut", {"netcut-both", "netcut-in", "netcut-out"}, p.netcut,
                             [](phase& ph, int k) { return inject_netcut(ph, "l0", ways[k]); });
        d.hosts = true;
        return run_single(s, rng, d);
    });
    run("netslow", [&] {
        static const std::vector<std::string> kinds{"netdelay", "netjitter", "netflap"};
        single d = net_phase("netslow", kinds, p.netslow, [](phase& ph, int k) {
            return inject_netslow(ph, "l0", kinds[static_cast<std::size_t>(k)]);
        });
        d.relays = true;
        return run_single(s, rng, d);
    });
    run("netdown", [&] {
        static const std::vector<std::string> kinds{"netdown-cut", "netdown-stale"};
        single d = net_phase("netdown", kinds, p.netdown, [](phase& ph, int k) {
            return inject_netdown(ph, "l0", kinds[static_cast<std::size_t>(k)]);
        });
        d.relays = true;
        d.floors.grants = p.netdown; // netdown-cut changes no leader
        return run_single(s, rng, d);
    });
    run("kill", [&] {
        return run_single(s, rng,
                          {"kill",
                           {{"kill", p.kill}},
                           floors({{"kill", p.kill}}, p.kill, 100, 0),
                           false,
                           [&](phase& ph) {
                               until_effective(p.kill, [&](int) {
                                   const bool hit = inject_kill(ph, "l0", false, "kill");
                                   settle(ttl * 3 / 2 + ph.uniform(0, 500));
                                   return hit;
                               });
                           }});
    });
    run("terminate", [&] {
        return run_single(
            s, rng,
            {"terminate",
             {{"terminate-renew", p.terminate}, {"terminate-write", p.terminate}},
             floors({{"terminate-renew", p.terminate}, {"terminate-write", p.terminate}}, 1, 100,
                    0),
             false,
             [&](phase& ph) {
                 static const char* aims[] = {"mid-write", "at-commit"};
                 until_effective(p.terminate, [&](int) {
                     const bool hit = inject_terminate(ph, "l0", "renew");
                     settle(ttl / 2 + ph.uniform(0, 300));
                     return hit;
                 });
                 until_effective(p.terminate, [&](int i) {
                     const bool hit = inject_terminate(ph, "l0", aims[i % 2]);
                     settle(ttl / 2 + ph.uniform(0, 300));
                     return hit;
                 });
             }});
    });
    run("crash", [&] {
        return run_single(s, rng,
                          {"crash",
                           {{"crash", p.crash}},
                           floors({{"crash", p.crash}}, 1, 100, 0),
                           false,
                           [&](phase& ph) {
                               until_effective(p.crash, [&](int) {
                                   const bool hit = inject_crash(ph);
                                   settle(2 * ttl + ph.uniform(0, 1000));
                                   return hit;
                               });
                           }});
    });
    run("clock", [&] {
        const int half = p.clock / 2;
        return run_single(
            s, rng,
            {"clock",
             {{"clock-forward", half}, {"clock-back", half}},
             floors({{"clock-forward", half}, {"clock-back", half}}, 3, 100, 3),
             true,
             [&](phase& ph) {
                 int offset = 0, fwd = 0, back = 0;
                 const int sizes[] = {2, 3, p.clock_max_ttls};
                 // forward by k, back to true time; back by k, forward to true time
                 for (int i = 0; (fwd < half || back < half || offset != 0) && i < 4 * half + 4 &&
                                 !interrupted();
                      ++i) {
                     const int k = std::max(1, sizes[(i / 2) % 3] * ttl / 1000);
                     const int step = offset != 0 ? -offset : (i / 2) % 2 == 0 ? k : -k;
                     if (inject_clock(ph, offset, step))
                         ++(step > 0 ? fwd : back);
                     settle(2 * ttl + (step < 0 ? -step * 1000 : 0) / 2 + ph.uniform(0, 500));
                 }
                 if (offset != 0)
                     inject_clock(ph, offset, -offset);
             }});
    });
    run("pause-in-txn", [&] {
        return run_single(s, rng,
                          {"pause-in-txn",
                           {{"pause-in-txn", p.pause_in_txn}},
                           floors({{"pause-in-txn", p.pause_in_txn}}, p.pause_in_txn, 50, 1),
                           false,
                           [&](phase& ph) {
                               until_effective(p.pause_in_txn, [&](int i) {
                                   const bool hit = inject_pause_in_txn(
                                       ph, "l0", i % 2 ? "busy" : "idle", i % 4 < 2 ? 4 : 5);
                                   settle(ttl * 2 + ph.uniform(0, 500));
                                   return hit;
                               });
                           }});
    });
    run("long-txn", [&] {
        return run_single(s, rng,
                          {"long-txn",
                           {{"long-txn", p.long_txn}},
                           floors({{"long-txn", p.long_txn}}, 1, 100, 0),
                           false,
                           [&](phase& ph) {
                               until_effective(p.long_txn, [&](int) {
                                   const bool hit = inject_long_txn(ph, "l0");
                                   settle(3 * ttl + ph.uniform(0, 500));
                                   return hit;
                               });
                           }});
    });

    // Planned handovers (issue 53; nemesis_handover.cpp).
    run("handover", [&] { return run_single(s, rng, handover_phase(p.handover, ttl)); });

    // A second database fenced by the lease's floor (1.4): the leader raises
    // it at each term, every transaction also writes there (in flight
    // across the whole store transaction), and paused, stalled and killed
    // leaders are replaced. I2d is checked on the downstream table.
    run("downstream", [&] {
        phase ph{s, "downstream", rng};
        ph.start_primary({"l0"}, false);
        ph.add_downstream();
        for (int i = 0; i < 3; ++i)
            ph.spawn_worker("l0", false);
        ph.wait_leader("l0", 15000);
        static const double mult[] = {1, 2, 5};
        until_effective(p.downstream, [&](int i) {
            const bool hit = inject_pause(ph, "l0", mult[i % 3]);
            settle(ttl * 2 + ph.uniform(0, 500));
            return hit;
        });
        until_effective(p.downstream, [&](int i) {
            const bool hit = inject_pause_in_txn(ph, "l0", i % 2 ? "busy" : "idle", 4);
            settle(ttl * 2 + ph.uniform(0, 500));
            return hit;
        });
        until_effective(p.downstream, [&](int) {
            const bool hit = inject_kill(ph, "l0", false, "kill");
            settle(ttl * 3 / 2 + ph.uniform(0, 500));
            return hit;
        });
        settle(2 * ttl);
        const int n = p.downstream;
        return ph.finish({}, floors({{"pause", n}, {"pause-in-txn", n}, {"kill", n}}, n, 50, 2),
                         {{"pause", n}, {"pause-in-txn", n}, {"kill", n}});
    });

    auto storm = [&](const std::string& name, int workers, int nleases, int seconds, bool pool,
                     int min_kills) {
        // Hundreds of contenders on 2 cores: configured as a large fleet
        // would be, with a longer ttl (so each holds longer before it
        // resigns and reconnects) and a slower retry.
        settings fleet = s;
        if (workers > 64) {
            fleet.ttl_ms = 3 * s.ttl_ms;
            fleet.renew_deadline_ms = 3 * s.renew_deadline_ms;
            fleet.retry_ms = 5 * s.retry_ms / 2;
        }
        phase ph{fleet, name, rng};
        std::vector<std::string> leases;
        for (int i = 0; i < nleases; ++i)
            leases.push_back("l" + std::to_string(i));
        // Each contender holds an elector and a write session.
        ph.start_primary(leases, false,
                         {"max_connections = " + std::to_string(std::max(320, 3 * workers + 40))});
        if (pool)
            ph.use_pool();
        // 64 workers sampling held() every 2 ms cost 2 cores 1.3 of them in
        // wakeups on a VM (60% system time), starving the server.
        if (workers >= 64)
            ph.use_fleet_load(workers <= 64);
        // Each resignation is a new session and each candidate polls at the
        // retry period: a server that starts fewer sessions than the storm
        // asks for runs it in slow motion (calibrate.hpp).
        // ph holds fleet by reference: its workers and checks see the stretch.
        const double stretch =
            pool ? 1 : stretch_storm(fleet, ph.primary().app_conninfo(), workers, name);
        for (int i = 0; i < workers; ++i)
            ph.spawn_worker(leases[static_cast<std::size_t>(i % nleases)], true);
        const auto end = mono_ns() + static_cast<std::int64_t>(seconds * stretch * 1e9);
        int planned = 0;
        while (mono_ns() < end && !interrupted()) {
            // Kills keep their pace: more of them per ttl in slow motion.
            settle(p.storm_kill_every_ms / 2 + ph.uniform(0, p.storm_kill_every_ms));
            ++planned;
            inject_kill(ph, ph.pick(leases), true, name);
        }
        settle(2 * fleet.ttl_ms);
        return ph.finish({}, floors({{name, min_kills}}, 20, 200, 5), {{name, planned}});
    };
    run("storm16", [&] { return storm("storm16", 16, 4, p.storm16_s, false, p.storm16_s / 3); });
    run("storm64", [&] { return storm("storm64", 64, 4, p.storm64_s, false, p.storm64_s / 3); });
    if (p.storm200_s > 0)
        run("storm200",
            [&] { return storm("storm200", 200, 8, p.storm200_s, false, p.storm200_s / 9); });
    run("pgbouncer", [&] { return storm("pgbouncer", 16, 2, p.pool_s, true, p.pool_s / 3); });

    auto failover = [&](bool sync) {
        const std::string name = sync ? "failover-sync" : "failover-async";
        const int planned = sync ? p.failover_sync : p.failover_async;
        phase ph{s, name, rng};
        // Synchronous replication is switched on once the standby streams.
        ph.start_primary({"l0"}, false, {"synchronous_commit = on"});
        ph.add_standby({});
        if (sync)
            ph.primary().configure("synchronous_standby_names = '*'", true);
        wait_replication(ph, sync);
        const auto& n = ph.nodes();
        ph.set_worker_conninfo("host=127.0.0.1,127.0.0.1 port=" + std::to_string(n[0]->port()) +
                               "," + std::to_string(n[1]->port()) + " user=" + app_user() +
                               " dbname=" + app_db() + " target_session_attrs=read-write");
        for (int i = 0; i < 3; ++i)
            ph.spawn_worker("l0", false);
        ph.wait_leader("l0", 15000);
        until_effective(planned, [&](int) {
            settle(ttl + ph.uniform(0, 1000));
            const bool hit = inject_failover(ph, sync);
            ph.wait_leader("l0", 15000);
            return hit;
        });
        settle(2 * ttl);
        phase_expectations ex;
        // A promoted asynchronous standby that lost a grant grants the
        // lease again while the lost grant's holder still believes (I4 is
        // not assumed; the fence still refuses that holder's writes).
        ex.lost_acks_allowed = !sync;
        ex.overlaps_allowed = !sync;
        // A synchronous failover keeps the leader (its grant was replicated).
        return ph.finish(ex, floors({{name, planned}}, sync ? 1 : planned, 50, 0),
                         {{name, planned}});
    };
    run("failover-async", [&] { return failover(false); });
    run("failover-sync", [&] { return failover(true); });
    return out;
}

} // namespace fault
