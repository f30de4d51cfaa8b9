"""Many leases held at once: grant time, expiries, the CPU and memory
of holding them."""
import os
import resource
import time

from driver.common import MANY_TTL, loadavg, parse_s, pct
from driver.waits import Waits


def server_pids(b, system):
    pid = b.a.pids[system]
    if system != "pg_lease":
        return [pid]
    pids = [pid]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        pids.append(int(d))
            except OSError:
                pass
    return pids


def server_usage(b, system):
    """({pid: CPU seconds}, PSS MiB, RSS MiB) over the server's processes
    (PSS shares PostgreSQL's shared memory out among its processes; RSS
    counts it once per process)."""
    tick = os.sysconf("SC_CLK_TCK")
    cpu, pss, rss = {}, 0, 0
    for pid in server_pids(b, system):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1]) / 1024
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1]) / 1024
        except OSError:
            pass
    return cpu, pss, rss


def client_cpu(ps):
    """CPU seconds of the running peer processes (all their threads)."""
    tick = os.sysconf("SC_CLK_TCK")
    cpu = {}
    for p in ps:
        try:
            with open(f"/proc/{p.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu[p.proc.pid] = (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return cpu


def many(b, variant, procs, leases, hold, run):
    """procs clients hold leases each; once all are granted they are held
    hold seconds (longer than the ttl: every lease must have been renewed
    to survive), the server's and the clients' CPU measured over that
    same window, then each client asks its server which are gone."""
    waits = Waits() if variant == "pg_lease" else None
    try:
        _many(b, variant, procs, leases, hold, run, waits)
    finally:
        if waits:
            waits.stop()


def _many(b, variant, procs, leases, hold, run, waits):
    system, per = (variant, 1) if variant != "etcd-keys" else ("etcd", leases)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    u0 = server_usage(b, system)
    t0 = time.time()
    ps = []
    bound = ["-hold", f"{hold + 240}s"]  # the driver ends the hold; this only bounds it
    if system == "zookeeper":
        # one JVM, `procs` sessions (100 JVMs would measure Java's footprint)
        ps.append(b.peer(system, "many", "many", "-id", f"m{os.getpid()}-{run}", "-sessions", str(procs),
                         "-leases", str(leases), "-ttl", MANY_TTL, *bound))
    else:
        for i in range(procs):
            # pg_lease: the same names in every run, new holders (a
            # redeploy), so its table keeps 100,000 rows rather than
            # growing by as many each run (the others' keys go with
            # their leases or sessions).
            names = ["-names", f"m{i}"] if system == "pg_lease" else []
            ps.append(b.peer(system, "many", f"many {i}", "-id", f"m{os.getpid()}-{run}-{i}",
                             *names, "-leases", str(leases), "-ttl", MANY_TTL,
                             "-per-lease", str(per), *bound))
    if waits:
        waits.mark("grant")
    granted = [p.wait_for("GRANTED", 300) for p in ps]
    # a client that could not get its leases within its bound (it exits)
    # is counted, not hidden; the others go on
    not_granted = [p for p, g in zip(ps, granted) if not g]
    for p in not_granted:
        print(f"  many {variant} run {run}: {p.label} not granted: {' | '.join(p.err[-2:])}", flush=True)
    ps = [p for p, g in zip(ps, granted) if g]
    if not ps:
        raise RuntimeError(f"many {variant}: no client was granted its leases")
    t_granted = time.time()
    u1, k1 = server_usage(b, system), client_cpu(ps)
    if waits:
        waits.mark("hold")
    time.sleep(hold)
    t_held = time.time()
    u2, k2 = server_usage(b, system), client_cpu(ps)
    if waits:
        waits.mark("release")
    for p in ps:
        p.resign()
    cycles = []
    if system == "pg_lease":
        for p in ps:
            c = p.wait_for("CYCLES", 120)
            cycles += [int(x) / 1000.0 for x in (c or [])[1:]]
    held = [p.wait_for("HELD", 180) for p in ps]
    if not all(held):
        ps[held.index(None)].fail("no HELD")
    if system == "pg_lease":
        # why the terms that ended did (pglease_peer's LOST line): shown
        # for the clients that gave leases up
        why = [p.wait_for("LOST", 10) for p, h in zip(ps, held) if int(h[3]) or int(h[5])]
        for w in why[:5]:
            print(f"  many {variant} run {run}: a client that gave leases up or saw them expire: {' '.join((w or ['?'])[1:])}", flush=True)
    for p in ps:
        p.stop(grace=120)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = sum(int(h[1]) for h in held)
    def window(a, b):  # CPU seconds over the window, of processes there at both ends
        return sum(v - a[pid] for pid, v in b.items() if pid in a)
    w = t_held - t_granted
    r = {"leases": total, "not_granted": len(not_granted) * leases, "expired": sum(int(h[5]) for h in held),
         "expired_by_process": [int(h[5]) for h in held if int(h[5])], "client_gave_up": sum(int(h[3]) for h in held),
         "grant_s": t_granted - t0, "server_cpu_grant_s": window(u0[0], u1[0]) + sum(
             v for pid, v in u1[0].items() if pid not in u0[0]),
         "server_cores_hold": window(u1[0], u2[0]) / w, "clients_cores_hold": window(k1, k2) / w,
         "hold_window_s": w, "server_pss_mib": u2[1], "server_rss_mib": u2[2], "server_pss_before_mib": u0[1],
         "clients_cpu_s": (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)}
    if waits:
        # what the server's sessions did, per phase: sessions per sample
        # by wait event and pg_lease call (CPU: active, waiting on nothing)
        r["server_waits"] = waits.stop()
        for phase in ("grant", "hold"):
            top = r["server_waits"].get(phase, {}).get("sessions_per_sample", {})
            print(f"  many {variant} run {run}: server sessions while {phase}ing, per sample: "
                  + (", ".join(f"{k} {v}" for k, v in list(top.items())[:6]) or "none active"), flush=True)
    if cycles:
        p99 = pct(cycles, .99)
        r.update({"cycles": len(cycles), "cycle_p50_ms": pct(cycles, .5), "cycle_p99_ms": p99,
                  "headroom": parse_s(MANY_TTL) * 1000 / 3 / p99})
    print(f"  many {variant} run {run}: {total} {'keys' if per > 1 else 'leases'} by {procs} "
          f"{'sessions' if system == 'zookeeper' else 'processes'}{f' ({per} keys a lease)' if per > 1 else ''}"
          f"{'; NOT GRANTED ' + str(r['not_granted']) if not_granted else ''}, "
          f"expired at the server {r['expired']} (client gave up on {r['client_gave_up']}); granted in {r['grant_s']:.1f} s "
          f"({r['server_cpu_grant_s']:.1f} server CPU s); holding, over {w:.0f} s: server {r['server_cores_hold']:.3f} cores, "
          f"clients {r['clients_cores_hold']:.3f} cores; PSS {u2[1]:.0f} MiB (before {u0[1]:.0f}), RSS {u2[2]:.0f} MiB; "
          f"clients {r['clients_cpu_s']:.1f} CPU s in all"
          + (f"; renew cycle p50 {r['cycle_p50_ms']:.0f} ms, p99 {r['cycle_p99_ms']:.0f} ms ({len(cycles)}), "
             f"headroom (ttl/3)/p99 {r['headroom']:.1f}x" if cycles else "") + f"; load {loadavg()}", flush=True)
    b.results["many"].setdefault(variant, []).append(r)
