# pg_lease with psycopg2: acquire, renew in a background thread, writes fenced by the session token.
# Run: python3 examples/python/psycopg2_fence.py   (Debian: python3-psycopg2; connects with PG* variables)
# Needs pg_lease installed in the server; the role creates the extension if missing and calls lease_revoke.
import threading
import time
from contextlib import closing

import psycopg2

LEASE, TTL, MARGIN = "scheduler", 3.0, 0.5  # seconds; renew every TTL/3, give up MARGIN before expiry
UPSERT = "INSERT INTO jobs VALUES (1, %s) ON CONFLICT (id) DO UPDATE SET state = excluded.state"


def connect(epoch=None, autocommit=False):  # PG* variables; with an epoch, the session carries it
    conn = psycopg2.connect("", options=f"-c pg_lease.epoch={epoch}" if epoch else "")
    conn.autocommit = autocommit
    return conn


def one(conn, sql, args=()):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone() if cur.description else None


def renewer(holder, epoch, deadline, stop, lost):
    """Renews on its own connection; sets `lost` on NULL, or when failures run past the local deadline."""
    conn = None
    while not stop.wait(TTL / 3):
        sent = time.monotonic()
        try:
            conn = conn if conn and not conn.closed else connect(autocommit=True)
            (until,) = one(conn, "SELECT lease_renew(%s, %s, %s)", (LEASE, holder, epoch))
        except psycopg2.Error:  # a failed renew: keep trying until the local deadline
            if time.monotonic() < deadline:
                continue
            until = None
        if until is None:
            print(f"{holder} lost the lease: renew returned NULL; stopping")
            lost.set()
            break
        deadline = sent + TTL - MARGIN
        print(f"{holder} renewed until {until}")
    if conn:
        conn.close()


with closing(connect(autocommit=True)) as admin:
    one(admin, "CREATE EXTENSION IF NOT EXISTS pg_lease;"
               "CREATE TABLE IF NOT EXISTS jobs (id int PRIMARY KEY, state text, epoch bigint)")
    one(admin, "SELECT lease_fence('jobs', %s)", (LEASE,))
    sent = time.monotonic()
    acquired, epoch_a, _, _ = one(admin, "SELECT * FROM lease_acquire(%s, 'worker-a', %s)", (LEASE, f"{TTL}s"))
    assert acquired, f"{LEASE} is held by someone else"
    print(f"worker-a acquired epoch {epoch_a}")
    stop, lost = threading.Event(), threading.Event()
    thread = threading.Thread(target=renewer, args=("worker-a", epoch_a, sent + TTL - MARGIN, stop, lost))
    thread.start()
    with closing(connect(epoch_a)) as worker_a:  # the token rides on the session: pg_lease.epoch
        time.sleep(TTL / 2)
        with worker_a, worker_a.cursor() as cur:  # one transaction: commit, or rollback on error
            cur.execute(UPSERT, ("started by worker-a",))
        print(f"worker-a wrote job 1 with epoch {epoch_a}")
        # An operator revokes the lease and worker-b takes over, before worker-a's next renew notices.
        one(admin, "SELECT lease_revoke(%s)", (LEASE,))
        (epoch_b,) = one(admin, "SELECT epoch FROM lease_acquire(%s, 'worker-b', '30s')", (LEASE,))
        print(f"worker-b acquired epoch {epoch_b}")
        with closing(connect(epoch_b)) as worker_b, worker_b, worker_b.cursor() as cur:
            cur.execute(UPSERT, ("done by worker-b",))
        print(f"worker-b wrote job 1 with epoch {epoch_b}")
        try:
            with worker_a, worker_a.cursor() as cur:  # a write that was already under way
                cur.execute(UPSERT, ("stale write by worker-a",))
        except psycopg2.Error as e:
            print(f"worker-a stale write refused: SQLSTATE {e.pgcode} ({e.diag.message_primary})")
    lost.wait(TTL)
    stop.set()
    thread.join()
    one(admin, "SELECT lease_release(%s, 'worker-b', %s)", (LEASE, epoch_b))
