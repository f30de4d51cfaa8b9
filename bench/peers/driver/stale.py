"""A paused leader's writes: how many commit after the new leader's first."""
import os
import signal
import time

from driver.common import now_us


def commit_order_setup(b):
    """Rows in commit order: a deferred trigger takes one advisory lock
    at commit and numbers the row; the lock is held until the commit is
    visible, so the numbers follow the commits (insert times do not)."""
    b.psql("CREATE SEQUENCE IF NOT EXISTS peers_commit_seq; "
           "CREATE TABLE IF NOT EXISTS peers_commit_order (tbl regclass, id bigint, seq bigint); "
           "CREATE OR REPLACE FUNCTION peers_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
           "PERFORM pg_advisory_xact_lock(7333001); "
           "INSERT INTO peers_commit_order VALUES (TG_RELID, NEW.id, nextval('peers_commit_seq')); "
           "RETURN NULL; END $$")


def stale(b, system, pause, mode, run=0):
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
    b.psql(f"DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
           f"writer text NOT NULL, seq int NOT NULL, token bigint, epoch bigint, at timestamptz NOT NULL DEFAULT clock_timestamp()); "
           f"CREATE CONSTRAINT TRIGGER commit_order AFTER INSERT ON {table} DEFERRABLE INITIALLY DEFERRED "
           f"FOR EACH ROW EXECUTE FUNCTION peers_commit_order()")
    if system == "pg_lease":
        b.psql(f"SELECT lease_fence('{table}', '{name}')")
    extra = ["-table", table] + {"client": [], "guard": ["-guard"], "fence": ["-fence"]}[mode]
    written = (lambda who: int(b.psql(f"SELECT count(*) FROM {table} WHERE writer = '{who}'"))) \
        if mode != "fence" else None
    old = b.elector(system, name, "old", *extra, *(["-pause-at", "40"] if pause == "self" else []))
    if not old.wait_for("LEADER", 60):
        old.fail("no LEADER")
    new = b.elector(system, name, "new", *extra)
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
        audit = b.peer(system, "audit", "audit", "-name", name)
        got = audit.wait_for("AUDIT", 60)
        audit.stop()
        if not got:
            audit.fail("no AUDIT")
        accepted, old_rows, new_rows = (int(x) for x in got[1:4])
    else:
        row = b.psql(
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
    b.results["stale"].setdefault(case, []).append(r)
