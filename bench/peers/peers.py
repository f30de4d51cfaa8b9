#!/usr/bin/env python3
"""The peers benchmark's driver: pg_lease side by side with etcd (its Go
client), ZooKeeper (Curator) and Redis, every figure measured in one run by
the same code for every system (bench/peers/README.md).  bench/peers/run.sh
starts the servers and calls it; it only starts and signals peer programs,
reads their lines, and queries PostgreSQL through psql.

Every peer program takes the same command line (elect | ops | many, -flags)
and prints the same lines: CAMPAIGN, LEADER, PAUSING, WRITE_REFUSED,
STOPPED_WRITING, LOST, RESIGNED, OPS, GRANTED, HELD.  Times are the wall
clock in microseconds, compared across processes of this one machine.
The figures are one module each in driver/; this file reads the options
and runs them in order.
"""
import argparse
import json
import os
import statistics
import time

from driver import many, moves, ops, partition, stale, walsync
from driver.bench import Bench
from driver.common import MANY_TTL, OPS, RETRY, SYSTEMS, TTL, loadavg, pct, spread
from driver.report import check, table


def say_moves(kind, system, took, nfail, more=""):
    print(f"  {kind} {system}: " + (f"p50 {pct(took, .5):.1f} ms, p99 {pct(took, .99):.1f} ms, "
          f"min {min(took):.1f}, max {max(took):.1f} " if took else "no timed run ") +
          f"({len(took)} runs, {nfail} failed{more})", flush=True)


def leader_part(part):
    """A handover's first half, from the request until the leader's own call returned."""
    return f"; the leader's call returned after p50 {pct(part, .5):.1f} ms" if part else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--classpath", required=True)
    ap.add_argument("--pglease-peer", required=True)
    ap.add_argument("--pg", required=True)
    ap.add_argument("--jdbc", required=True)
    ap.add_argument("--etcd", required=True)
    ap.add_argument("--zk", required=True)
    ap.add_argument("--redis", required=True)
    ap.add_argument("--pids", required=True, help="system=pid,... of the servers")
    ap.add_argument("--json", required=True)
    ap.add_argument("--only", default="failover,handover,handover-load,partition,stale,ops,many")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--load-clients", type=int, default=4,
                    help="handover-load: clients of the durable lease cycle beside the chain")
    ap.add_argument("--stale-runs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--ops", default=",".join(OPS), help="ops: which of its figures (cycle: with each WAL's flushes)")
    ap.add_argument("--many-procs", type=int, default=100)
    ap.add_argument("--many-leases", type=int, default=1000)
    ap.add_argument("--many-hold", type=float, default=32.0, help="seconds held once all are granted (> ttl)")
    ap.add_argument("--many-runs", type=int, default=3)
    ap.add_argument("--many-variants", default="pg_lease,etcd,etcd-keys,zookeeper,redis")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--net-ns", help="partition: the leader's host (namespace), made by run.sh")
    ap.add_argument("--net-addr", help="partition: the servers' address on that host's link")
    ap.add_argument("--net-helpers", help="partition: tests/harness/netns.sh")
    ap.add_argument("--no-net", help="partition: why it cannot run here (printed)")
    a = ap.parse_args()
    SYSTEMS[:] = [s for s in SYSTEMS if s in a.systems.split(",")]
    if a.smoke:
        a.runs, a.rounds, a.seconds, a.clients, a.stale_runs = 2, 1, 0.3, "2", 1
        a.many_procs, a.many_leases, a.many_hold, a.many_runs = 4, 50, 3.0, 1
    a.pids = {k: int(v) for k, v in (x.split("=") for x in a.pids.split(","))}
    only = a.only.split(",")
    clients = [int(c) for c in a.clients.split(",")]
    b = Bench(a)
    b.results["settings"] = {"ttl": TTL, "retry": RETRY, "runs": a.runs, "stale_runs": a.stale_runs, "rounds": a.rounds,
                             "seconds": a.seconds, "clients": clients, "many_procs": a.many_procs,
                             "many_leases": a.many_leases, "many_ttl": MANY_TTL, "many_hold_s": a.many_hold,
                             "many_runs": a.many_runs, "ops": a.ops.split(","), "cpus": sorted(os.sched_getaffinity(0)), "load_start": loadavg()}
    try:
        for kind in ("failover", "handover"):
            if kind not in only:
                continue
            print(f"{kind}: {a.runs} runs per system, ttl {TTL}, retry {RETRY}; load {loadavg()}", flush=True)
            for system in SYSTEMS:
                took = moves.moves(b, system, kind, a.runs)
                b.results[kind][system] = took
                say_moves(kind, system, took, len(b.results[kind + '_failed'][system]),
                          leader_part(b.results.get(f"{kind}_leader_part", {}).get(system)))
                b.cleanup()
        if "handover-load" in only:
            # The same planned handovers while each system's server is busy
            # with its own users' durable lease cycles (OPS "cycle", every
            # client on the clients' CPUs as in every figure). The load runs a
            # fixed time longer than the chain needs and reports its rate: the
            # proof that it ran, and at what level, throughout.
            seconds = 15 + 6 * a.runs
            print(f"handover-load: {a.runs} runs per system beside {a.load_clients} clients of the durable cycle "
                  f"({seconds} s); load {loadavg()}", flush=True)
            rates = b.results.setdefault("handover_load_cycles", {})
            for system in SYSTEMS:
                load = b.peer(system, "ops", "load", "-op", OPS["cycle"][system], "-clients", str(a.load_clients),
                              "-seconds", str(seconds), "-ttl", f"{seconds + 60}s")  # no lease expires mid-load
                time.sleep(2)  # the load's clients connected and cycling
                t0 = time.time()
                took = moves.moves(b, system, "handover", a.runs, key="handover_load")
                chain_s = time.time() - t0
                got = load.wait_for("OPS", 120 + seconds)
                load.stop(grace=30)
                if not got or load.proc.returncode != 0:
                    load.fail("the load did not finish")
                if chain_s + 2 > seconds:
                    load.fail(f"the chain took {chain_s:.0f} s, longer than the load's {seconds} s")
                b.results["handover_load"][system] = took
                rates[system] = float(got[5])
                say_moves("handover-load", system, took, len(b.results["handover_load_failed"][system]),
                          f"; beside {rates[system]:.0f} cycles/s, chain {chain_s:.0f} s" +
                          leader_part(b.results["handover_load_leader_part"].get(system)))
                b.cleanup()
        if "partition" in only:
            if not a.net_ns:
                why = a.no_net or "no --net-ns (bench/peers/run.sh makes the host)"
                print(f"partition: skipped: {why}", flush=True)
                b.results["partition_skipped"] = why
            else:
                print(f"partition: {a.runs if not a.smoke else 1} runs per system, ttl {TTL}, retry {RETRY}; the leader on its own host "
                      f"({a.net_ns}, servers at {a.net_addr}), the follower on loopback; load {loadavg()}", flush=True)
                for system in SYSTEMS:
                    for run in range(a.runs if not a.smoke else 1):
                        partition.partition(b, system, run, a.smoke)
                        b.cleanup()
                    rs = b.results["partition"][system]
                    print(f"  partition {system}: step-down {spread([r['stepdown_ms'] for r in rs if r['stepdown_ms'] is not None], '{:.0f}')} ms "
                          f"({sum(r['stepdown_ms'] is None for r in rs)} runs without LOST by the heal), new leader "
                          f"{spread([r['new_leader_ms'] for r in rs if r['new_leader_ms'] is not None], '{:.0f}')} ms, overlap "
                          f"{spread([r['overlap_ms'] for r in rs if 'overlap_ms' in r], '{:.0f}')} ms "
                          f"({sum(r.get('overlap_ms', 0) > 0 for r in rs)} runs with an overlap)", flush=True)
        if "stale" in only:
            print(f"stale: a paused leader's writes; load {loadavg()}", flush=True)
            stale.commit_order_setup(b)
            for system in SYSTEMS:
                for pause in (os.environ.get("PEERS_PAUSES") or "sigstop,self").split(","):
                    modes = ("client",) if system == "pg_lease" else ("client", "guard", "fence")
                    if a.smoke and system != "etcd":
                        modes = modes[:1] + modes[2:]  # the smoke: every fence; etcd's guard shows the guarded path works
                    for mode in modes:
                        for run in range(a.stale_runs):
                            stale.stale(b, system, pause, mode, run)
                            b.cleanup()
        if "ops" in only:
            print(f"ops: {a.rounds} rounds of {a.seconds} s, order rotated per round; load {loadavg()}", flush=True)
            walsync.setup(b)
            for c in clients:
                for figure, per in OPS.items():
                    samples = {s: [] for s in per if s in SYSTEMS and figure in a.ops.split(",")}
                    flushes = {}
                    if not samples:
                        continue
                    for r in range(a.rounds):
                        order = list(samples)
                        order = order[r % len(order):] + order[:r % len(order)]
                        for system in order:
                            wal = figure == "cycle" and system in walsync.SYSTEMS
                            before = walsync.snapshot(b, system) if wal else None
                            rate, done = ops.ops(b, system, per[system], c, a.seconds)
                            samples[system].append(rate)
                            if wal:  # the same round's flushes: each server's own counters
                                flushes.setdefault(system, []).append(
                                    walsync.delta(before, walsync.snapshot(b, system), done))
                    for system, xs in samples.items():
                        b.results["ops"].setdefault(figure, {}).setdefault(system, {})[str(c)] = xs
                        print(f"  {figure} {system} ({per[system]}) {c} clients: median {statistics.median(xs):.0f}/s {xs}",
                              flush=True)
                        if system in flushes:
                            b.results["wal"].setdefault(system, {})[str(c)] = flushes.pop(system)
                            print(f"    WAL flushes: {walsync.say(b.results['wal'][system][str(c)])}", flush=True)
                b.cleanup()
        if "many" in only:
            variants = [v for v in a.many_variants.split(",") if (v if v != "etcd-keys" else "etcd") in SYSTEMS]
            b.results["settings"]["many_variants"] = variants
            print(f"many: {a.many_procs} x {a.many_leases} leases, ttl {MANY_TTL}, held {a.many_hold} s once all are granted, "
                  f"{a.many_runs} runs, order rotated per run; load {loadavg()}", flush=True)
            for run in range(a.many_runs):
                order = variants[run % len(variants):] + variants[:run % len(variants)]
                for v in order:
                    many.many(b, v, a.many_procs, a.many_leases, a.many_hold, run)
                    b.cleanup()
    finally:
        b.cleanup()
        with open(a.json, "w") as f:
            json.dump(b.results, f, indent=1)
    b.results["settings"]["load_end"] = loadavg()
    with open(a.json, "w") as f:
        json.dump(b.results, f, indent=1)
    table(b.results, clients)
    if a.smoke:
        check(b.results, only, clients)


if __name__ == "__main__":
    main()
