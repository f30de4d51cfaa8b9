"""What every part of the peers driver shares: the settings of the
figures, the systems and their operations, and the statistics."""
import statistics
import time

TTL = "2s"          # lease ttl / session timeout of the failover figures
RETRY = "300ms"     # retry period where a peer polls (pg_lease follower, Redis)
MANY_TTL = "30s"


def now_us():
    return int(time.time() * 1e6)


def parse_s(d):
    return float(d[:-2]) / 1000 if d.endswith("ms") else float(d[:-1])


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


SYSTEMS = ["pg_lease", "etcd", "zookeeper", "redis"]
OPS = {  # figure -> {system: op}; durable except Redis's and etcd's keepalive
    "cycle": {"pg_lease": "cycle", "etcd": "claim-delete", "zookeeper": "cycle", "redis": "cycle"},
    "grant-revoke": {"etcd": "grant-revoke"},
    "renew": {"pg_lease": "renew", "etcd": "txn", "zookeeper": "setdata", "redis": "renew"},
    # counted per lease; both renew 100 leases a round trip (pg_lease
    # lease_renew_many, one commit; etcd 100 requests pipelined on its stream)
    "keepalive": {"pg_lease": "renew-many", "etcd": "keepalive"},
    "keepalive-once": {"etcd": "keepalive-once"},
}


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def spread(xs, fmt="{:.1f}"):
    """median (min-max, n runs): what the run gave, never only its best."""
    if not xs:
        return "-"
    if len(xs) == 1:
        return fmt.format(xs[0])
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))}, {len(xs)} runs)"
