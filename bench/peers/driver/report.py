"""The run's table (markdown, every figure as median and spread) and the
smoke's checks (the harness works; never timings)."""
import statistics
import sys

from driver import walsync
from driver.common import OPS, SYSTEMS, pct, spread


def table(res, clients):
    print("\n| figure | " + " | ".join(SYSTEMS) + " |")
    print("|---|" + "---:|" * len(SYSTEMS))
    for kind in ("failover", "handover", "handover_load"):
        if res.get(kind):
            failed = res.get(f"{kind}_failed", {})
            cells = [(f"{pct(res[kind][s], .5):.1f} / {pct(res[kind][s], .99):.1f} ms" if res[kind].get(s) else "-") +
                     (f" (the leader's call returned at {pct(res[kind + '_leader_part'][s], .5):.1f} ms)"
                      if res.get(kind + "_leader_part", {}).get(s) else "") +
                     (f" beside {res['handover_load_cycles'][s]:,.0f} cycles/s"
                      if kind == "handover_load" and s in res.get("handover_load_cycles", {}) else "") +
                     (f" ({len(failed[s])} runs failed: no leader in 30 s, or one before the handover)" if failed.get(s) else "")
                     for s in SYSTEMS]
            label = "handover under load" if kind == "handover_load" else kind
            print(f"| {label} p50 / p99 | " + " | ".join(cells) + " |")
    if res.get("partition"):
        def cell(rs):
            down = [r["stepdown_ms"] for r in rs if r["stepdown_ms"] is not None]
            up = [r["new_leader_ms"] for r in rs if r["new_leader_ms"] is not None]
            over = [r["overlap_ms"] for r in rs if "overlap_ms" in r]
            never = sum(r["stepdown_ms"] is None for r in rs)
            back = sum(r["rejoin_takeover_ms"] is not None for r in rs)
            again = sum(r["old_led_again_before_resign"] is not None for r in rs)
            return (f"step-down {spread(down, '{:.0f}')} ms; new leader {spread(up, '{:.0f}')} ms; "
                    f"overlap {spread(over, '{:.0f}')} ms"
                    + (f" (**{sum(x > 0 for x in over)} of {len(rs)} runs overlapped**)" if any(x > 0 for x in over) else "")
                    + (f"; **{never} of {len(rs)} runs: no step-down by the heal**" if never else "")
                    + (f"; **{again} led again after the heal before the new one resigned**" if again else "")
                    + f"; back as a follower without a restart: {back} of {len(rs)}")
        print("| a leader's host cut off (nftables drop both ways), from the cut | " + " | ".join(
            cell(res["partition"][s]) if res["partition"].get(s) else "-" for s in SYSTEMS) + " |")
    what = {"": "the client's word that it leads, then a write to PostgreSQL",
            "-guard": "a check at the peer, then a separate write to PostgreSQL (a check made in the client does not fence writes to PostgreSQL)",
            "-fence": "the write into the peer itself, fenced there (etcd Txn on the leader key's revision, ZooKeeper multi(check, create), Redis script)"}
    for pause in ("sigstop", "self"):
        for mode in ("", "-guard", "-fence"):
            cells = []
            for s in SYSTEMS:
                rs = res["stale"].get(f"{s}-{pause}{mode}")
                cells.append(f"{sum(r['accepted_stale'] for r in rs)} of {len(rs)} pauses "
                             f"({', '.join(str(r['accepted_stale']) for r in rs)})" if rs else "-")
            if any(c != "-" for c in cells):
                how = "paused by SIGSTOP" if pause == "sigstop" else "paused between its check and its write"
                print(f"| stale writes committed after the new leader's first, {how}; {what[mode]} | " + " | ".join(cells) + " |")
    for figure, per in res["ops"].items():
        for c in clients:
            cells = []
            for s in SYSTEMS:
                xs = per.get(s, {}).get(str(c))
                cell = f"{statistics.median(xs):,.0f}/s" if xs else "-"
                if xs and figure == "keepalive":
                    cell = f"{statistics.median(xs):,.0f} leases/s, {statistics.median(xs) / 100:,.0f} round trips/s"
                cells.append(cell)
            print(f"| {figure}, {c} clients | " + " | ".join(cells) + " |")
    wal = res.get("wal", {})
    for c in clients:
        if any(str(c) in wal.get(s, {}) for s in SYSTEMS):
            print(f"| WAL flushes during the cycle, {c} clients | " + " | ".join(
                walsync.say(wal[s][str(c)]) if str(c) in wal.get(s, {}) else "-" for s in SYSTEMS) + " |")
    for v, rs in res["many"].items():
        cells = [f"expired at the server {spread([r['expired'] for r in rs], '{:.0f}')}",
                 f"not granted within the bound {spread([r.get('not_granted', 0) for r in rs], '{:.0f}')}",
                 f"client gave up {spread([r['client_gave_up'] for r in rs], '{:.0f}')}",
                 f"granted in {spread([r['grant_s'] for r in rs])} s",
                 f"holding: server {spread([r['server_cores_hold'] for r in rs], '{:.3f}')} cores, "
                 f"clients {spread([r['clients_cores_hold'] for r in rs], '{:.3f}')} cores",
                 f"PSS {spread([r['server_pss_mib'] for r in rs], '{:.0f}')} MiB"]
        if any("headroom" in r for r in rs):
            cells.append(f"renew cycle p99 {spread([r['cycle_p99_ms'] for r in rs], '{:.0f}')} ms, "
                         f"headroom {spread([r['headroom'] for r in rs])}x")
        print(f"| many: {v} | " + "; ".join(cells) + " |")


def check(res, only, clients):
    """The smoke's checks: the harness works; never timings."""
    bad = []
    for kind in ("failover", "handover", "handover-load"):
        if kind in only:
            key = kind.replace("-", "_")
            for s in SYSTEMS:
                if not res[key].get(s) or any(x <= 0 or x > 30000 for x in res[key][s]):
                    bad.append(f"{kind} {s}: {res[key].get(s)}")
                if kind == "handover-load" and not res.get("handover_load_cycles", {}).get(s, 0) > 0:
                    bad.append(f"{kind} {s}: the load made no cycle")
    if "stale" in only:
        for s in SYSTEMS:
            for pause in ("sigstop", "self"):
                for mode in ("",) if s == "pg_lease" else ("", "-fence"):
                    rs = res["stale"].get(f"{s}-{pause}{mode}")
                    if not rs or any(r["new_rows"] < 1 or r["old_rows"] < 1 for r in rs):
                        bad.append(f"stale {s} {pause}{mode}: {rs}")
        # the fence refuses every stale write: the one check on outcomes,
        # and it is pg_lease's guarantee, not a timing
        # (and each peer's own fence, for writes into that peer)
        for s in SYSTEMS:
            for pause in ("sigstop", "self"):
                for r in res["stale"].get(f"{s}-{pause}{'' if s == 'pg_lease' else '-fence'}", []):
                    if r["accepted_stale"] != 0:
                        bad.append(f"{s} accepted {r['accepted_stale']} stale writes ({pause})")
    if "partition" in only and not res.get("partition_skipped"):
        for s in SYSTEMS:
            rs = res["partition"].get(s)
            # the harness: the follower was elected while the leader was cut off
            if not rs or any(r["new_leader_ms"] is None for r in rs):
                bad.append(f"partition {s}: {rs}")
    if "ops" in only:
        for figure, per in OPS.items():
            for s in (x for x in per if x in SYSTEMS and figure in res["settings"]["ops"]):
                for c in clients:
                    xs = res["ops"].get(figure, {}).get(s, {}).get(str(c))
                    if not xs or min(xs) <= 0:
                        bad.append(f"ops {figure} {s} {c}: {xs}")
                    if figure == "cycle" and s in walsync.SYSTEMS:
                        rounds = res["wal"].get(s, {}).get(str(c))
                        if not rounds or any(not r["flushes"] or not r["flush_ms"] for r in rounds):
                            bad.append(f"WAL flushes of the cycle {s} {c}: {rounds}")
    if "many" in only:
        for v in res["settings"].get("many_variants", []):
            rs = res["many"].get(v)
            if not rs or any(r["leases"] <= 0 for r in rs):
                bad.append(f"many {v}: {rs}")
            elif v == "pg_lease" and any(not r.get("server_waits", {}).get("hold", {}).get("samples") for r in rs):
                bad.append(f"many {v}: the server's waits were not sampled: {[r.get('server_waits') for r in rs]}")

    if bad:
        print("SMOKE FAILED:\n  " + "\n  ".join(bad))
        sys.exit(1)
    said = {"failover": "failed over", "handover": "handed over", "handover-load": "handed over under load",
            "stale": "stale counts", "ops": "ops figures and the cycle's WAL flushes", "many": "many figures"}
    done = [said[k] for k in said if k in only]
    if "partition" in only:
        done.append(f"partition {'skipped: ' + res['partition_skipped'] if res.get('partition_skipped') else 'a new leader while the old was cut off'}")
    print(f"smoke ({', '.join(SYSTEMS)}): " + "; ".join(done) + ": produced")
