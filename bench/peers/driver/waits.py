"""What the server's sessions wait on while many leases are granted and
held (pg_lease only): pg_stat_activity sampled every 200 ms by one psql
(`\\watch`), each sample's active client sessions counted by wait event
and by the pg_lease function they run. Shares per phase of the figure:
where the time of acquire and renew calls goes, measured, not guessed."""
import collections
import subprocess
import threading

QUERY = ("SELECT extract(epoch FROM clock_timestamp())::numeric(16, 3), "
         "coalesce(wait_event_type || ':' || wait_event, 'CPU'), "
         "coalesce(substring(query FROM 'lease_[a-z_]+'), 'other'), count(*) "
         "FROM pg_catalog.pg_stat_activity "
         "WHERE backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid() "
         "GROUP BY 2, 3 UNION ALL SELECT extract(epoch FROM clock_timestamp())::numeric(16, 3), '', '', 0")


class Waits:
    """Samples from start() on; mark(phase) starts a new phase's counts."""

    def __init__(self, interval=0.2):
        self.proc = subprocess.Popen(["psql", "-X", "-A", "-t", "-q", "-F", "|"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.proc.stdin.write(f"{QUERY} \\watch {interval}\n")
        self.proc.stdin.flush()
        self.lock = threading.Lock()
        self.phase = "start"
        self.counts = collections.defaultdict(collections.Counter)  # phase -> (wait, call) -> sessions
        self.samples = collections.Counter()  # phase -> samples
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            f = line.rstrip("\n").split("|")
            if len(f) != 4:
                continue
            with self.lock:
                if f[1] == "":
                    self.samples[self.phase] += 1  # one marker row per sample
                else:
                    self.counts[self.phase][(f[1], f[2])] += int(f[3])

    def mark(self, phase):
        with self.lock:
            self.phase = phase

    def stop(self):
        """The counts per phase (idempotent: the psql is ended once)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.reader.join(timeout=5)
        with self.lock:
            return {phase: {"samples": self.samples[phase],
                            "sessions_per_sample": {f"{w} {c}": round(n / max(self.samples[phase], 1), 2)
                                                    for (w, c), n in self.counts[phase].most_common(12)}}
                    for phase in self.samples}
