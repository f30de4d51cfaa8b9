"""The run's state: its options, its results, the live peer processes,
and how each system's peer program is started."""
import os
import signal
import subprocess

from driver.common import RETRY, SYSTEMS, TTL
from driver.peer import Peer


class Bench:
    def __init__(self, a):
        self.a = a
        self.results = {"systems": SYSTEMS, "failover": {}, "handover": {}, "handover_load": {}, "stale": {},
                        "partition": {}, "ops": {}, "wal": {}, "many": {}, "settings": {}}
        self.live = []

    # ---- the systems ----------------------------------------------------
    def argv(self, system, mode, host=None):
        """host: reach every server at that address instead (the partition
        figure's leader, on the host side of its link)."""
        a = self.a
        pg, jdbc, etcd, redis, zk = a.pg, a.jdbc, a.etcd, a.redis, a.zk
        if host:
            pg = " ".join(f"host={host}" if w.startswith("host=") else w for w in pg.split())
            jdbc = jdbc.replace("//127.0.0.1:", f"//{host}:")
            etcd, redis, zk = (f"{host}:{e.rsplit(':', 1)[1]}" for e in (etcd, redis, zk))
        if system == "pg_lease":
            return [a.pglease_peer, mode, "-pg", pg]
        if system == "etcd":
            return [os.path.join(a.bin, "etcdpeer"), mode, "-endpoint", etcd, "-pg", pg]
        if system == "zookeeper":
            return ["java", "-Xss512k", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", a.classpath,
                    "ZkPeer", mode, "-endpoint", zk, "-pg", jdbc]
        if system == "redis":
            return [os.path.join(a.bin, "redispeer"), mode, "-endpoint", redis, "-pg", pg]
        raise ValueError(system)

    def peer(self, system, mode, label, *extra):
        p = Peer(self.argv(system, mode) + list(extra), f"{system} {label}")
        self.live.append(p)
        return p

    def cleanup(self):
        for p in self.live:
            if p.proc.poll() is None:
                p.signal(signal.SIGCONT)
                p.signal(signal.SIGKILL)
                p.proc.wait()
        self.live = []

    def psql(self, sql):
        out = subprocess.run(["psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql],
                             check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def elector(self, system, name, ident, *extra):
        return self.peer(system, "elect", ident, "-name", name, "-id", ident, "-ttl", TTL,
                         "-retry", RETRY, *extra)

