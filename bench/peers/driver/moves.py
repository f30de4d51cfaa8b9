"""Failover and planned handover: a chain of leaders, each killed (or
resigning) while a follower campaigns."""
import os
import random
import signal
import time

from driver.common import now_us


def moves(b, system, kind, runs, key=None):
    """Chained: the leader is killed (or resigns) while a follower
    campaigns; the follower's LEADER time minus the kill (resign) time.
    key: the figure's name in the results (default: kind)."""
    key = key or kind
    name = f"{key}-{system}-{os.getpid()}"
    leader = b.elector(system, name, f"{kind}0")
    if not leader.wait_for("LEADER", 60):
        leader.fail("no LEADER")
    took = []
    b.results.setdefault(f"{key}_failed", {})[system] = []
    # a handover's first half: the request until the leader's own call
    # (yield_to, Resign) returned; the rest is the successor's wake-up
    leader_part = b.results.setdefault(f"{key}_leader_part", {})[system] = []
    for i in range(1, runs + 1):
        follower = b.elector(system, name, f"{kind}{i}")
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
            b.results[f"{key}_failed"][system].append(why)
            leader.signal(signal.SIGKILL)
            follower.signal(signal.SIGKILL)
            leader.stop(grace=1)
            follower.stop(grace=1)
            name = f"{kind}-{system}-{os.getpid()}-{i}"
            leader = b.elector(system, name, f"{kind}{i}r")
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
            b.results[f"{key}_failed"][system].append(why)
        else:
            took.append((int(got[1]) - t) / 1000.0)
        if kind == "handover":
            if not leader.wait_for("RESIGNED", 10):
                leader.fail("no RESIGNED")
            # pg_lease's peer says HANDED when yield_to returned (RESIGNED
            # comes after its elector stopped); the others resign, then say it
            done = leader.wait_for("HANDED" if system == "pg_lease" else "RESIGNED", 0)
            if done and len(took) > len(leader_part):
                leader_part.append((int(done[1]) - t) / 1000.0)
        leader.stop(grace=5)
        leader = follower
    leader.resign()
    leader.wait_for("RESIGNED", 10)
    leader.stop()
    return took
