"""What each durable operation's flushes cost, read from each server's own
counters around the very rounds that measure the operation: PostgreSQL's
`pg_stat_wal` (`wal_sync`, `wal_sync_time`: needs `track_wal_io_timing`)
and etcd's `etcd_disk_wal_fsync_duration_seconds` histogram (`/metrics`).
A rate that swings between runs is then told apart: slower flushes (the
disk) or more flushes per operation (less group commit)."""
import time
import urllib.request

from driver.common import spread

SYSTEMS = ("pg_lease", "etcd")  # the two WALs; ZooKeeper's and Redis's are not read


def setup(b):
    """PostgreSQL times its WAL syncs only when asked to (a clock read per
    sync, no other cost)."""
    b.psql("ALTER SYSTEM SET track_wal_io_timing = on")
    b.psql("SELECT pg_reload_conf()")
    for _ in range(50):  # the reload reaches this session within 5 s
        if b.psql("SHOW track_wal_io_timing") == "on":
            return
        time.sleep(0.1)
    raise RuntimeError("track_wal_io_timing did not turn on")


def _pg(b):
    # pg_stat_wal is flushed by each backend at most once a second and at
    # exit, and by the WAL writer in its loop: the caller reads it after the
    # peer's sessions have ended and a second has passed.
    syncs, ms = b.psql("SELECT wal_sync, wal_sync_time FROM pg_stat_wal").split("|")
    return int(syncs), float(ms)


def _etcd(b):
    with urllib.request.urlopen(f"http://{b.a.etcd}/metrics", timeout=5) as r:
        text = r.read().decode()
    count = total = None
    for line in text.splitlines():
        if line.startswith("etcd_disk_wal_fsync_duration_seconds_count"):
            count = int(float(line.split()[-1]))
        elif line.startswith("etcd_disk_wal_fsync_duration_seconds_sum"):
            total = float(line.split()[-1]) * 1000
    if count is None or total is None:
        raise RuntimeError("etcd's /metrics has no etcd_disk_wal_fsync_duration_seconds")
    return count, total


def snapshot(b, system):
    time.sleep(1.1)
    return _pg(b) if system == "pg_lease" else _etcd(b)


def delta(before, after, ops_done):
    """flushes, their mean time (ms), flushes per operation."""
    n = after[0] - before[0]
    return {"flushes": n,
            "flush_ms": (after[1] - before[1]) / n if n else None,
            "flushes_per_op": n / ops_done if ops_done else None}


def say(rounds):
    """One line for a figure's rounds: median and range of each round's mean
    flush time, and of its flushes per operation."""
    ms = [r["flush_ms"] for r in rounds if r["flush_ms"] is not None]
    per = [r["flushes_per_op"] for r in rounds if r["flushes_per_op"] is not None]
    return (f"mean flush {spread(ms, '{:.2f}')} ms, {spread(per, '{:.2f}')} flushes per operation "
            f"(each round: {', '.join(f'{x:.2f}' for x in ms)} ms)")
