# pg_lease with psycopg 3: acquire, renew in a background thread, fenced writes, a stale write refused.
# Run: python3 examples/python/psycopg3_fence.py   (Debian: python3-psycopg; connects with PG* variables)
# Needs pg_lease installed in the server; the role creates the extension if missing and calls lease_revoke.
import threading
import time

import psycopg

LEASE, TTL, MARGIN = "scheduler", 3.0, 0.5  # seconds; renew every TTL/3, give up MARGIN before expiry


def renewer(holder, epoch, deadline, stop, lost):
    """Renews on its own connection; sets `lost` on NULL, or when failures run past the local deadline."""
    conn = None
    while not stop.wait(TTL / 3):
        sent = time.monotonic()
        try:
            conn = conn if conn and not conn.closed else psycopg.connect(autocommit=True)
            until = conn.execute("SELECT lease_renew(%s, %s, %s, %s * interval '1s')",
                                 (LEASE, holder, epoch, TTL)).fetchone()[0]
        except psycopg.Error as e:
            print(f"{holder} renew failed: {e}")
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


def write_job(conn, epoch, state):
    """One fenced write: lease_use declares the token in the write's own transaction."""
    with conn.transaction():
        conn.execute("SELECT lease_use(%s, %s)", (LEASE, epoch))
        conn.execute("INSERT INTO jobs VALUES (1, %s) ON CONFLICT (id) DO UPDATE SET state = excluded.state",
                     (state,))


def acquire(conn, holder):
    sent = time.monotonic()
    acquired, epoch, _, _ = conn.execute("SELECT * FROM lease_acquire(%s, %s, %s * interval '1s')",
                                         (LEASE, holder, TTL)).fetchone()
    assert acquired, f"{LEASE} is held by someone else"
    print(f"{holder} acquired epoch {epoch}")
    return epoch, sent + TTL - MARGIN


with psycopg.connect(autocommit=True) as conn, psycopg.connect(autocommit=True) as other:
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_lease")
    conn.execute("CREATE TABLE IF NOT EXISTS jobs (id int PRIMARY KEY, state text, epoch bigint)")
    conn.execute("SELECT lease_fence('jobs', %s)", (LEASE,))

    epoch_a, deadline = acquire(conn, "worker-a")
    stop, lost = threading.Event(), threading.Event()
    thread = threading.Thread(target=renewer, args=("worker-a", epoch_a, deadline, stop, lost))
    thread.start()
    time.sleep(TTL / 2)  # work under the lease while it is renewed
    if not lost.is_set():
        write_job(conn, epoch_a, "started by worker-a")
        print(f"worker-a wrote job 1 with epoch {epoch_a}")

    # An operator revokes the lease and worker-b takes over, before worker-a's next renew notices.
    other.execute("SELECT lease_revoke(%s)", (LEASE,))
    epoch_b, _ = acquire(other, "worker-b")
    write_job(other, epoch_b, "done by worker-b")
    print(f"worker-b wrote job 1 with epoch {epoch_b}")
    try:
        write_job(conn, epoch_a, "stale write by worker-a")  # a write that was already under way
    except psycopg.Error as e:
        print(f"worker-a stale write refused: SQLSTATE {e.sqlstate} ({e.diag.message_primary})")
    lost.wait(TTL)
    stop.set()
    thread.join()
    other.execute("SELECT lease_release(%s, 'worker-b', %s)", (LEASE, epoch_b))
