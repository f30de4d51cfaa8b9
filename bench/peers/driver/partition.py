"""A leader's host cut off (nftables drop both ways) and healed."""
import os
import random
import subprocess
import time

from driver.common import RETRY, TTL, loadavg, now_us, parse_s
from driver.peer import Peer


def net(b, what):
    """net_cut (both ways) or net_heal of the leader's host, by the shell
    helpers of tests/harness/netns.sh (run.sh made the host); the time
    the rules were in force (or gone): when the command returned."""
    t0 = time.time()
    cmd = {"cut": "net_cut leader both", "heal": "net_heal leader"}[what]
    subprocess.run(["bash", "-c", f'source "$1"; NET_NS[leader]=$2; {cmd}', "net", b.a.net_helpers,
                    b.a.net_ns], check=True, timeout=20)
    return now_us(), (time.time() - t0) * 1000


def partition(b, system, run, smoke):
    """The leader runs on a host of its own (a namespace joined by a veth
    pair), the follower on loopback; the leader's host is cut off both
    ways (nftables drop: its sockets stay open). From the cut: the old
    leader's LOST, the follower's LEADER, their overlap; then the heal,
    and whether the old leader came back as a follower without a
    restart: the new one resigns and the old one must lead again."""
    a = b.a
    bound = 12.0 if smoke else 20.0  # 6 and 10 ttl
    name = f"partition-{system}-{os.getpid()}-{run}"
    args = ["-name", name, "-ttl", TTL, "-retry", RETRY, "-rejoin"]
    old = Peer(["ip", "netns", "exec", a.net_ns] + b.argv(system, "elect", host=a.net_addr) +
               args + ["-id", "cutoff"], f"{system} cut-off leader")
    b.live.append(old)
    if not old.wait_for("LEADER", 60):
        old.fail("no LEADER")
    # the follower at a random point of the leader's renew cycle too: a
    # follower that polls every retry period (Redis), started a fixed
    # time after the leader, keeps one phase to its renewals run after
    # run (the first run of this figure showed it)
    time.sleep(random.uniform(0, 2 * parse_s(RETRY)))
    new = b.peer(system, "elect", "follower", *args, "-id", "follower")
    if not new.wait_for("CAMPAIGN", 60):
        new.fail("no CAMPAIGN")
    # campaigning; then a random point of the leader's renew cycle
    time.sleep(0.5 + random.uniform(0, 0.7))
    t_before = now_us()
    t_cut, cut_ms = net(b, "cut")
    end = time.time() + bound
    led = new.wait_for("LEADER", bound)
    lost = old.wait_after("LOST", t_before, max(0.0, end - time.time()))
    # the same cut for every system: at least 3 ttl (the smoke: at once)
    time.sleep(max(0.0, (t_cut / 1e6 + (0 if smoke else 3 * parse_s(TTL))) - time.time()))
    t_heal, heal_ms = net(b, "heal")
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
    b.results["partition"].setdefault(system, []).append(r)
