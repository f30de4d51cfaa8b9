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
"""
import argparse
import json
import os
import queue
import random
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time

TTL = "2s"          # lease ttl / session timeout of the failover figures
RETRY = "300ms"     # retry period where a peer polls (pg_lease follower, Redis)
MANY_TTL = "30s"


def now_us():
    return int(time.time() * 1e6)


class Peer:
    """One peer process: its stdout lines on a queue, stdin for "resign"."""

    def __init__(self, argv, label):
        self.label = label
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines = queue.Queue()
        self.seen = {}
        self.log = []  # every line read, in order
        self.err = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.split())
        self.lines.put(["EOF"])

    def _read_err(self):
        for line in self.proc.stderr:
            self.err.append(line.rstrip())

    def wait_for(self, word, timeout):
        """The fields of the first line starting with word (None on timeout or exit)."""
        if word in self.seen:
            return self.seen[word]
        if "EOF" in self.seen:  # the process is gone: no wait (many clients, one by one)
            return None
        end = time.time() + timeout
        while time.time() < end:
            try:
                fields = self.lines.get(timeout=max(0.001, end - time.time()))
            except queue.Empty:
                break
            self.seen.setdefault(fields[0], fields)
            self.log.append(fields)
            if fields[0] == word:
                return fields
            if fields[0] == "EOF":
                break
        return None

    def wait_after(self, word, t_us, timeout):
        """The first line starting with word whose time (its second field)
        is t_us or later, read before or within timeout (None if none)."""
        end = time.time() + timeout
        while True:
            try:  # every line already there, then the log
                while True:
                    fields = self.lines.get_nowait()
                    self.seen.setdefault(fields[0], fields)
                    self.log.append(fields)
            except queue.Empty:
                pass
            for fields in self.log:
                if fields[0] == word and len(fields) > 1 and fields[1].isdigit() and int(fields[1]) >= t_us:
                    return fields
            if "EOF" in self.seen or time.time() >= end:
                return None
            try:
                fields = self.lines.get(timeout=max(0.001, end - time.time()))
            except queue.Empty:
                continue
            self.seen.setdefault(fields[0], fields)
            self.log.append(fields)

    def resign(self, successor=""):
        t = now_us()
        try:
            self.proc.stdin.write(f"resign {successor}\n" if successor else "resign\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        return t

    def signal(self, sig):
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, grace=5.0):
        """Waits for the process after closing stdin; SIGKILL after grace."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def state(self):
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return "gone"

    def fail(self, what):
        raise RuntimeError(f"{self.label}: {what}; stderr: {' | '.join(self.err[-5:])}")


class Bench:
    def __init__(self, a):
        self.a = a
        self.results = {"systems": SYSTEMS, "failover": {}, "handover": {}, "stale": {},
                        "partition": {}, "ops": {}, "many": {}, "settings": {}}
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

    # ---- failover and handover -------------------------------------------
    def moves(self, system, kind, runs):
        """Chained: the leader is killed (or resigns) while a follower
        campaigns; the follower's LEADER time minus the kill (resign) time."""
        name = f"{kind}-{system}-{os.getpid()}"
        leader = self.elector(system, name, f"{kind}0")
        if not leader.wait_for("LEADER", 60):
            leader.fail("no LEADER")
        took = []
        self.results.setdefault(f"{kind}_failed", {})[system] = []
        for i in range(1, runs + 1):
            follower = self.elector(system, name, f"{kind}{i}")
            if not follower.wait_for("CAMPAIGN", 60):
                follower.fail("no CAMPAIGN")
            # campaigning; then a random point of the leader's renew cycle
            time.sleep(0.5 + random.uniform(0, 0.7))
            if kind == "failover":
                t = now_us()
                leader.signal(signal.SIGKILL)
            elif system == "pg_lease":
                # its users' planned handover: yield_to the follower (which
                # leads on the NOTIFY, confirmed by a read, no commit of its
                # own); etcd's follower is queued by its Campaign already
                t = leader.resign(successor=f"{kind}{i}")
            else:
                t = leader.resign()
            got = follower.wait_for("LEADER", 30)
            if not got:
                # counted, not hidden: the run is reported as failed, and
                # the chain starts again from a fresh leader
                why = f"run {i}: no leader 30 s after the {kind}; follower stderr: {' | '.join(follower.err[-3:])}"
                print(f"  {kind} {system}: {why}", flush=True)
                self.results[f"{kind}_failed"][system].append(why)
                leader.signal(signal.SIGKILL)
                follower.signal(signal.SIGKILL)
                leader.stop(grace=1)
                follower.stop(grace=1)
                name = f"{kind}-{system}-{os.getpid()}-{i}"
                leader = self.elector(system, name, f"{kind}{i}r")
                if not leader.wait_for("LEADER", 60):
                    leader.fail("no LEADER")
                continue
            if int(got[1]) < t:
                # the follower led before the kill / resign: the leader had
                # already lost (its own lines say how); counted, not timed
                leader.wait_after("EOF", 0, 0)  # read what it printed so far
                lines = [" ".join(f[:1] + [f"{(int(f[1]) - t) / 1000.0:+.0f}ms"] + f[2:]) for f in leader.log
                         if f[0] in ("LOST", "STATE") and len(f) > 1 and f[1].isdigit()]
                why = (f"run {i}: the follower led {(t - int(got[1])) / 1000.0:.0f} ms before the {kind}; "
                       f"the leader's lines: {', '.join(lines) or 'none'}")
                print(f"  {kind} {system}: {why}", flush=True)
                self.results[f"{kind}_failed"][system].append(why)
            else:
                took.append((int(got[1]) - t) / 1000.0)
            if kind == "handover" and not leader.wait_for("RESIGNED", 10):
                leader.fail("no RESIGNED")
            leader.stop(grace=5)
            leader = follower
        leader.resign()
        leader.wait_for("RESIGNED", 10)
        leader.stop()
        return took

    # ---- a leader's host cut off -------------------------------------------
    def net(self, what):
        """net_cut (both ways) or net_heal of the leader's host, by the shell
        helpers of tests/harness/netns.sh (run.sh made the host); the time
        the rules were in force (or gone): when the command returned."""
        t0 = time.time()
        cmd = {"cut": "net_cut leader both", "heal": "net_heal leader"}[what]
        subprocess.run(["bash", "-c", f'source "$1"; NET_NS[leader]=$2; {cmd}', "net", self.a.net_helpers,
                        self.a.net_ns], check=True, timeout=20)
        return now_us(), (time.time() - t0) * 1000

    def partition(self, system, run, smoke):
        """The leader runs on a host of its own (a namespace joined by a veth
        pair), the follower on loopback; the leader's host is cut off both
        ways (nftables drop: its sockets stay open). From the cut: the old
        leader's LOST, the follower's LEADER, their overlap; then the heal,
        and whether the old leader came back as a follower without a
        restart: the new one resigns and the old one must lead again."""
        a = self.a
        bound = 12.0 if smoke else 20.0  # 6 and 10 ttl
        name = f"partition-{system}-{os.getpid()}-{run}"
        args = ["-name", name, "-ttl", TTL, "-retry", RETRY, "-rejoin"]
        old = Peer(["ip", "netns", "exec", a.net_ns] + self.argv(system, "elect", host=a.net_addr) +
                   args + ["-id", "cutoff"], f"{system} cut-off leader")
        self.live.append(old)
        if not old.wait_for("LEADER", 60):
            old.fail("no LEADER")
        # the follower at a random point of the leader's renew cycle too: a
        # follower that polls every retry period (Redis), started a fixed
        # time after the leader, keeps one phase to its renewals run after
        # run (the first run of this figure showed it)
        time.sleep(random.uniform(0, 2 * parse_s(RETRY)))
        new = self.peer(system, "elect", "follower", *args, "-id", "follower")
        if not new.wait_for("CAMPAIGN", 60):
            new.fail("no CAMPAIGN")
        # campaigning; then a random point of the leader's renew cycle
        time.sleep(0.5 + random.uniform(0, 0.7))
        t_before = now_us()
        t_cut, cut_ms = self.net("cut")
        end = time.time() + bound
        led = new.wait_for("LEADER", bound)
        lost = old.wait_after("LOST", t_before, max(0.0, end - time.time()))
        # the same cut for every system: at least 3 ttl (the smoke: at once)
        time.sleep(max(0.0, (t_cut / 1e6 + (0 if smoke else 3 * parse_s(TTL))) - time.time()))
        t_heal, heal_ms = self.net("heal")
        lost_after_heal = None
        if not lost:
            got = old.wait_after("LOST", t_before, 10)
            lost_after_heal = (int(got[1]) - t_heal) / 1000.0 if got else None
        r = {"cut_cmd_ms": cut_ms, "heal_cmd_ms": heal_ms, "heal_after_cut_ms": (t_heal - t_cut) / 1000.0,
             "stepdown_ms": (int(lost[1]) - t_cut) / 1000.0 if lost else None,
             "stepdown_why": " ".join(lost[2:]) if lost else None,
             "new_leader_ms": (int(led[1]) - t_cut) / 1000.0 if led else None,
             "lost_after_heal_ms": lost_after_heal}
        if led and lost:
            r["overlap_ms"] = max(0.0, (int(lost[1]) - int(led[1])) / 1000.0)
        elif led:  # still claiming at the heal: at least this long
            r["overlap_at_least_ms"] = (t_heal - int(led[1])) / 1000.0
        # After the heal: the old leader must not lead while the new one
        # does; then the new one resigns and the old one, a follower again
        # in the same process, takes over.
        time.sleep(1.0 if smoke else 2.0)
        again = old.wait_after("LEADER", t_before, 0)
        r["old_led_again_before_resign"] = (int(again[1]) - t_heal) / 1000.0 if again else None
        t_resign = new.resign()
        resigned = new.wait_for("RESIGNED", 10)
        back = old.wait_after("LEADER", t_before, 15)
        r["rejoin_takeover_ms"] = (int(back[1]) - t_resign) / 1000.0 if back else None
        r["resign_after_heal_ms"] = (t_resign - t_heal) / 1000.0
        # what the old leader printed from the cut on, ms after the cut
        r["old_lines"] = [f"{f[0]} {(int(f[1]) - t_cut) / 1000.0:+.0f}" + (" " + " ".join(f[2:]) if len(f) > 2 else "")
                          for f in old.log if len(f) > 1 and f[1].isdigit() and int(f[1]) >= t_before]
        old.resign()
        old.wait_for("RESIGNED", 10)
        old.stop(grace=5)
        new.stop(grace=5)
        if not resigned:
            r["new_not_resigned"] = True

        def ms(v):
            return "-" if v is None else f"{v:.0f}"
        print(f"  partition {system} run {run}: step-down {ms(r['stepdown_ms'])} ms ({r['stepdown_why'] or 'no LOST by the heal'}), "
              f"new leader {ms(r['new_leader_ms'])} ms, overlap "
              + (f"{r['overlap_ms']:.0f} ms" if "overlap_ms" in r else
                 f"at least {r['overlap_at_least_ms']:.0f} ms (still claiming at the heal; LOST {ms(lost_after_heal)} ms after it)"
                 if "overlap_at_least_ms" in r else "-")
              + f"; healed at {r['heal_after_cut_ms']:.0f} ms; after the heal the old one led again before the new one resigned: "
              f"{'no' if again is None else ms(r['old_led_again_before_resign']) + ' ms after the heal'}; "
              f"it took over {ms(r['rejoin_takeover_ms'])} ms after the new one resigned; "
              f"cut {cut_ms:.0f} ms, heal {heal_ms:.0f} ms (commands); old leader's lines: {', '.join(r['old_lines'])}; "
              f"load {loadavg()}", flush=True)
        self.results["partition"].setdefault(system, []).append(r)

    # ---- a paused leader's writes -----------------------------------------
    def commit_order_setup(self):
        """Rows in commit order: a deferred trigger takes one advisory lock
        at commit and numbers the row; the lock is held until the commit is
        visible, so the numbers follow the commits (insert times do not)."""
        self.psql("CREATE SEQUENCE IF NOT EXISTS peers_commit_seq; "
                  "CREATE TABLE IF NOT EXISTS peers_commit_order (tbl regclass, id bigint, seq bigint); "
                  "CREATE OR REPLACE FUNCTION peers_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                  "PERFORM pg_advisory_xact_lock(7333001); "
                  "INSERT INTO peers_commit_order VALUES (TG_RELID, NEW.id, nextval('peers_commit_seq')); "
                  "RETURN NULL; END $$")

    def stale(self, system, pause, mode, run=0):
        """A leader writing is paused past its ttl (SIGSTOP from outside at
        any point of its loop, or by itself between its check and its
        write), a new leader is elected and writes, the old one resumes: how
        many of its writes were committed after the new leader's first, in
        commit order. mode: client (its client's word that it leads),
        guard (and a check at the peer before each write to PostgreSQL),
        fence (the writes go into the peer, fenced there)."""
        case = f"{system}-{pause}{'' if mode == 'client' else '-' + mode}"
        table = "w_" + case.replace("-", "_") + f"_{run}"
        name = f"stale-{case}-{run}-{os.getpid()}"
        self.psql(f"DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                  f"writer text NOT NULL, seq int NOT NULL, token bigint, epoch bigint, at timestamptz NOT NULL DEFAULT clock_timestamp()); "
                  f"CREATE CONSTRAINT TRIGGER commit_order AFTER INSERT ON {table} DEFERRABLE INITIALLY DEFERRED "
                  f"FOR EACH ROW EXECUTE FUNCTION peers_commit_order()")
        if system == "pg_lease":
            self.psql(f"SELECT lease_fence('{table}', '{name}')")
        extra = ["-table", table] + {"client": [], "guard": ["-guard"], "fence": ["-fence"]}[mode]
        written = (lambda who: int(self.psql(f"SELECT count(*) FROM {table} WHERE writer = '{who}'"))) \
            if mode != "fence" else None
        old = self.elector(system, name, "old", *extra, *(["-pause-at", "40"] if pause == "self" else []))
        if not old.wait_for("LEADER", 60):
            old.fail("no LEADER")
        new = self.elector(system, name, "new", *extra)
        if not new.wait_for("CAMPAIGN", 60):
            new.fail("no CAMPAIGN")
        if pause == "self":
            if not old.wait_for("PAUSING", 30):
                old.fail("did not pause")
            end = time.time() + 10
            while old.state() != "T" and time.time() < end:
                time.sleep(0.01)
        else:
            end = time.time() + 30
            if written:
                while written("old") < 20 and time.time() < end:
                    time.sleep(0.05)
            else:
                time.sleep(0.3)  # about 40 writes at 5 ms
            old.signal(signal.SIGSTOP)
        stopped = now_us()
        if not new.wait_for("LEADER", 30):
            new.fail("no LEADER while the old one is paused")
        end = time.time() + 10
        if written:
            while written("new") < 1 and time.time() < end:
                time.sleep(0.02)
        else:
            time.sleep(0.2)
        resumed = now_us()
        old.signal(signal.SIGCONT)
        done = old.wait_for("STOPPED_WRITING", 10)
        lost = old.wait_for("LOST", 3)
        time.sleep(0.2)
        # counted while the new leader still leads (a pg_lease elector that
        # stepped down campaigns again and would lead, legitimately, after it)
        if mode == "fence":
            audit = self.peer(system, "audit", "audit", "-name", name)
            got = audit.wait_for("AUDIT", 60)
            audit.stop()
            if not got:
                audit.fail("no AUDIT")
            accepted, old_rows, new_rows = (int(x) for x in got[1:4])
        else:
            row = self.psql(
                f"WITH o AS (SELECT w.writer, c.seq FROM {table} w JOIN peers_commit_order c "
                f"ON c.tbl = '{table}'::regclass AND c.id = w.id) "
                f"SELECT count(*) FILTER (WHERE writer = 'old' AND seq > (SELECT min(seq) FROM o WHERE writer = 'new')), "
                f"count(*) FILTER (WHERE writer = 'old'), count(*) FILTER (WHERE writer = 'new') FROM o")
            accepted, old_rows, new_rows = (int(x) for x in row.split("|"))
        refused = old.seen.get("WRITE_REFUSED")
        old.signal(signal.SIGKILL)
        new.resign()
        new.wait_for("RESIGNED", 10)
        old.stop(grace=2)
        new.stop(grace=5)
        r = {"accepted_stale": accepted, "old_rows": old_rows, "new_rows": new_rows,
             "paused_ms": (resumed - stopped) / 1000.0,
             "old_refused": " ".join(refused[2:]) if refused else None,
             "old_stopped_after_ms": (int(done[1]) - resumed) / 1000.0 if done else None,
             "old_lost_after_ms": (int(lost[1]) - resumed) / 1000.0 if lost else None}
        where = "in the peer's commit order" if mode == "fence" else "in PostgreSQL's commit order"
        print(f"  stale {case}: {accepted} of the old leader's writes committed after the new leader's first, {where} "
              f"(paused {r['paused_ms']:.0f} ms; old stopped writing {r['old_stopped_after_ms']} ms after resuming"
              f"{'; refused: ' + r['old_refused'] if refused else ''})", flush=True)
        self.results["stale"].setdefault(case, []).append(r)

    # ---- throughput ---------------------------------------------------------
    def ops(self, system, op, clients, seconds):
        p = self.peer(system, "ops", f"ops {op}", "-op", op, "-clients", str(clients),
                      "-seconds", str(seconds), "-ttl", "60s")
        got = p.wait_for("OPS", 120 + seconds)
        p.stop(grace=30)
        if not got or p.proc.returncode != 0:
            p.fail(f"ops {op} at {clients} clients failed")
        return float(got[5])

    # ---- many leases ----------------------------------------------------------
    def server_pids(self, system):
        pid = self.a.pids[system]
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

    def server_usage(self, system):
        """({pid: CPU seconds}, PSS MiB, RSS MiB) over the server's processes
        (PSS shares PostgreSQL's shared memory out among its processes; RSS
        counts it once per process)."""
        tick = os.sysconf("SC_CLK_TCK")
        cpu, pss, rss = {}, 0, 0
        for pid in self.server_pids(system):
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

    def client_cpu(self, ps):
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

    def many(self, variant, procs, leases, hold, run):
        """procs clients hold leases each; once all are granted they are held
        hold seconds (longer than the ttl: every lease must have been renewed
        to survive), the server's and the clients' CPU measured over that
        same window, then each client asks its server which are gone."""
        system, per = (variant, 1) if variant != "etcd-keys" else ("etcd", leases)
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        u0 = self.server_usage(system)
        t0 = time.time()
        ps = []
        bound = ["-hold", f"{hold + 240}s"]  # the driver ends the hold; this only bounds it
        if system == "zookeeper":
            # one JVM, `procs` sessions (100 JVMs would measure Java's footprint)
            ps.append(self.peer(system, "many", "many", "-id", f"m{os.getpid()}-{run}", "-sessions", str(procs),
                                "-leases", str(leases), "-ttl", MANY_TTL, *bound))
        else:
            for i in range(procs):
                # pg_lease: the same names in every run, new holders (a
                # redeploy), so its table keeps 100,000 rows rather than
                # growing by as many each run (the others' keys go with
                # their leases or sessions).
                names = ["-names", f"m{i}"] if system == "pg_lease" else []
                ps.append(self.peer(system, "many", f"many {i}", "-id", f"m{os.getpid()}-{run}-{i}",
                                    *names, "-leases", str(leases), "-ttl", MANY_TTL,
                                    "-per-lease", str(per), *bound))
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
        u1, k1 = self.server_usage(system), self.client_cpu(ps)
        time.sleep(hold)
        t_held = time.time()
        u2, k2 = self.server_usage(system), self.client_cpu(ps)
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
        self.results["many"].setdefault(variant, []).append(r)


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
    ap.add_argument("--only", default="failover,handover,partition,stale,ops,many")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--stale-runs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--clients", default="1,4,16")
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
                             "many_runs": a.many_runs, "cpus": sorted(os.sched_getaffinity(0)), "load_start": loadavg()}
    try:
        for kind in ("failover", "handover"):
            if kind not in only:
                continue
            print(f"{kind}: {a.runs} runs per system, ttl {TTL}, retry {RETRY}; load {loadavg()}", flush=True)
            for system in SYSTEMS:
                took = b.moves(system, kind, a.runs)
                b.results[kind][system] = took
                nfail = len(b.results[kind + '_failed'][system])
                print(f"  {kind} {system}: " + (f"p50 {pct(took, .5):.1f} ms, p99 {pct(took, .99):.1f} ms, "
                      f"min {min(took):.1f}, max {max(took):.1f} " if took else "no timed run ") +
                      f"({len(took)} runs, {nfail} failed)", flush=True)
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
                        b.partition(system, run, a.smoke)
                        b.cleanup()
                    rs = b.results["partition"][system]
                    print(f"  partition {system}: step-down {spread([r['stepdown_ms'] for r in rs if r['stepdown_ms'] is not None], '{:.0f}')} ms "
                          f"({sum(r['stepdown_ms'] is None for r in rs)} runs without LOST by the heal), new leader "
                          f"{spread([r['new_leader_ms'] for r in rs if r['new_leader_ms'] is not None], '{:.0f}')} ms, overlap "
                          f"{spread([r['overlap_ms'] for r in rs if 'overlap_ms' in r], '{:.0f}')} ms "
                          f"({sum(r.get('overlap_ms', 0) > 0 for r in rs)} runs with an overlap)", flush=True)
        if "stale" in only:
            print(f"stale: a paused leader's writes; load {loadavg()}", flush=True)
            b.commit_order_setup()
            for system in SYSTEMS:
                for pause in (os.environ.get("PEERS_PAUSES") or "sigstop,self").split(","):
                    modes = ("client",) if system == "pg_lease" else ("client", "guard", "fence")
                    if a.smoke and system != "etcd":
                        modes = modes[:1] + modes[2:]  # the smoke: every fence; etcd's guard shows the guarded path works
                    for mode in modes:
                        for run in range(a.stale_runs):
                            b.stale(system, pause, mode, run)
                            b.cleanup()
        if "ops" in only:
            print(f"ops: {a.rounds} rounds of {a.seconds} s, order rotated per round; load {loadavg()}", flush=True)
            for c in clients:
                for figure, per in OPS.items():
                    samples = {s: [] for s in per if s in SYSTEMS}
                    if not samples:
                        continue
                    for r in range(a.rounds):
                        order = list(samples)
                        order = order[r % len(order):] + order[:r % len(order)]
                        for system in order:
                            samples[system].append(b.ops(system, per[system], c, a.seconds))
                    for system, xs in samples.items():
                        b.results["ops"].setdefault(figure, {}).setdefault(system, {})[str(c)] = xs
                        print(f"  {figure} {system} ({per[system]}) {c} clients: median {statistics.median(xs):.0f}/s {xs}",
                              flush=True)
                b.cleanup()
        if "many" in only:
            variants = [v for v in a.many_variants.split(",") if (v if v != "etcd-keys" else "etcd") in SYSTEMS]
            b.results["settings"]["many_variants"] = variants
            print(f"many: {a.many_procs} x {a.many_leases} leases, ttl {MANY_TTL}, held {a.many_hold} s once all are granted, "
                  f"{a.many_runs} runs, order rotated per run; load {loadavg()}", flush=True)
            for run in range(a.many_runs):
                order = variants[run % len(variants):] + variants[:run % len(variants)]
                for v in order:
                    b.many(v, a.many_procs, a.many_leases, a.many_hold, run)
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


def spread(xs, fmt="{:.1f}"):
    """median (min-max, n runs): what the run gave, never only its best."""
    if not xs:
        return "-"
    if len(xs) == 1:
        return fmt.format(xs[0])
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))}, {len(xs)} runs)"


def table(res, clients):
    print("\n| figure | " + " | ".join(SYSTEMS) + " |")
    print("|---|" + "---:|" * len(SYSTEMS))
    for kind in ("failover", "handover"):
        if res[kind]:
            failed = res.get(f"{kind}_failed", {})
            cells = [(f"{pct(res[kind][s], .5):.1f} / {pct(res[kind][s], .99):.1f} ms" if res[kind].get(s) else "-") +
                     (f" ({len(failed[s])} runs failed: no leader in 30 s, or one before the {kind})" if failed.get(s) else "")
                     for s in SYSTEMS]
            print(f"| {kind} p50 / p99 | " + " | ".join(cells) + " |")
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
    for kind in ("failover", "handover"):
        if kind in only:
            for s in SYSTEMS:
                if not res[kind].get(s) or any(x <= 0 or x > 30000 for x in res[kind][s]):
                    bad.append(f"{kind} {s}: {res[kind].get(s)}")
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
            for s in (x for x in per if x in SYSTEMS):
                for c in clients:
                    xs = res["ops"].get(figure, {}).get(s, {}).get(str(c))
                    if not xs or min(xs) <= 0:
                        bad.append(f"ops {figure} {s} {c}: {xs}")
    if "many" in only:
        for v in res["settings"].get("many_variants", []):
            rs = res["many"].get(v)
            if not rs or any(r["leases"] <= 0 for r in rs):
                bad.append(f"many {v}: {rs}")

    if bad:
        print("SMOKE FAILED:\n  " + "\n  ".join(bad))
        sys.exit(1)
    print("smoke: every system elected, handed over, failed over" +
          ("" if "partition" not in only else
           f", partition {'skipped: ' + res['partition_skipped'] if res.get('partition_skipped') else 'a new leader while the old was cut off'}") +
          "; stale counts, ops and many figures produced")


if __name__ == "__main__":
    main()
