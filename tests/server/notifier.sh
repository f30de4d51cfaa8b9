#!/usr/bin/env bash
# NOTIFY pg_lease off the commit path (pg_lease in shared_preload_libraries):
# the notifier worker sends every committed event once, in per-lease order,
# nothing for a rollback; it comes back after it dies; a full queue makes
# the committing transaction send for itself; PREPARE is refused; DROP
# DATABASE is not held up.  Without preloading, the committing transaction
# still sends (as in 1.1).
#
#   PG_BIN=/path/to/bin tests/server/notifier.sh   # default: the system's
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"
root=$PG_CLUSTER_ROOT

# --- listeners: psql LISTENing; it prints what arrived after each query ----
declare -A listener_pids
listen_start()
{
	local name=$1
	rm -f "$root/$name.stop" "$root/$name.listen"
	{
		echo "LISTEN pg_lease;"
		while [ ! -e "$root/$name.stop" ]; do
			echo "SELECT 1;"
			sleep 0.05
		done
	} | psql -X -q -A -t >"$root/$name.listen" 2>&1 &
	listener_pids[$name]=$!
	# LISTEN has run once the listener's next query shows (one at a time)
	local deadline=$((SECONDS + 20))
	until [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT 1;'")" -gt 0 ]; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.05
	done
}
listen_stop()
{
	touch "$root/$1.stop"
	wait "${listener_pids[$1]}" 2>/dev/null || true
}
# listen_count NAME [REGEX]: notifications whose payload matches REGEX
listen_count()
{
	grep -c "^Asynchronous notification \"pg_lease\" with payload \"{.*${2:-}" "$root/$1.listen" || true
}
# listen_wait NAME COUNT [REGEX] [SECONDS]: until COUNT have arrived
listen_wait()
{
	local deadline=$((SECONDS + ${4:-20}))
	while [ "$(listen_count "$1" "${3:-}")" -lt "$2" ]; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
}
worker_pid()
{
	q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_lease notifier' AND datname = current_database()"
}
# wait_worker [OLD_PID]: prints the worker's pid once there is one (not OLD)
wait_worker()
{
	local deadline=$((SECONDS + 20)) pid
	while :; do
		pid=$(worker_pid)
		if [ -n "$pid" ] && [ "$pid" != "${1:-}" ]; then
			echo "$pid"
			return 0
		fi
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
}

# compare_history LISTENER REGEX: per lease (names matching REGEX), the
# notifications are exactly lease_events, in its order: every committed
# event once, nothing else.
compare_history()
{
	q "SELECT event, name, coalesce(holder, ''), epoch FROM lease_events WHERE name ~ '$2' ORDER BY id" |
		tr '|' '\t' >"$root/history.tsv"
	python3 - "$root/$1.listen" "$root/history.tsv" "$2" <<'PY'
import json, re, sys
listen, history, pattern = sys.argv[1:4]
got, want = {}, {}
for line in open(listen):
    m = re.match(r'Asynchronous notification "pg_lease" with payload "(.*)" received from server process with PID \d+\.$', line.rstrip("\n"))
    if m:
        p = json.loads(m.group(1))
        if re.search(pattern, p["name"]):
            got.setdefault(p["name"], []).append((p["event"], p["holder"] or "", str(p["epoch"])))
for line in open(history):
    event, name, holder, epoch = line.rstrip("\n").split("\t")
    want.setdefault(name, []).append((event, holder, epoch))
bad = [n for n in set(got) | set(want) if got.get(n) != want.get(n)]
for n in bad:
    print(f"lease {n}: notified {got.get(n)}\n  history {want.get(n)}", file=sys.stderr)
print(f"  {sum(map(len, want.values()))} events of {len(want)} leases compared", file=sys.stderr)
sys.exit(1 if bad or not want else 0)
PY
}

# =============================================================================
pg_cluster_start nt -c shared_preload_libraries=pg_lease -c pg_lease.takeover_timeout=200ms
check "this build is loaded (pg_lease.notify_mode exists)" \
	test "$(q "SHOW pg_lease.notify_mode")" = worker
q "CREATE EXTENSION pg_lease" >/dev/null

# --- every event, once, in per-lease order -----------------------------------
listen_start all
cat >"$root/cycle.sql" <<'SQL'
SELECT epoch FROM lease_acquire('own-' || :client_id, 'h' || :client_id, '60 s') \gset
SELECT lease_release('own-' || :client_id, 'h' || :client_id, :epoch);
SELECT acquired, epoch FROM lease_acquire('shared', 'h' || :client_id, '60 s') \gset s_
SELECT lease_release('shared', 'h' || :client_id, :s_epoch);
SQL
# pgbench is a client: another major's server tree may have none
pgbench=$PG_BIN/pgbench
[ -x "$pgbench" ] || pgbench=$(pg_config --bindir)/pgbench
"$pgbench" -n -c 4 -j 4 -t 50 -f "$root/cycle.sql" >"$root/pgbench.out" 2>&1 ||
	{ cat "$root/pgbench.out" >&2; false; }
q "CREATE TABLE jobs (id int, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs', 'evicted')" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT epoch AS e FROM lease_acquire('handed', 'a', '60 s') \gset
SELECT lease_handover('handed', 'a', :e, 'b');
SELECT lease_revoke('handed');
SELECT acquired FROM lease_acquire('expired', 'a', '50 ms');
SELECT pg_sleep(0.1);
SELECT acquired FROM lease_acquire('expired', 'b', '60 s');
SELECT epoch AS e FROM lease_acquire('evicted', 'a', '1 s') \gset
SQL
e=$(q "SELECT epoch FROM leases WHERE name = 'evicted'")
psql -X -q >/dev/null 2>&1 <<SQL &
BEGIN;
SELECT lease_use('evicted', $e);
INSERT INTO jobs VALUES (1);
SELECT pg_sleep(3);
COMMIT;
SQL
writer=$!
sleep 1.3
q "SELECT acquired FROM lease_acquire('evicted', 'b', '60 s')" >/dev/null
wait "$writer" || true
expected=$(q "SELECT count(*) FROM lease_events")
check "the listener gets all $expected events" listen_wait all "$expected"
sleep 0.5 # and no more
check "per lease: exactly the committed events (lease_events), once each, in order" \
	compare_history all '.'
check "... among them a grant, release, handover, revoke, takeover and evict" \
	test "$(q "SELECT count(DISTINCT event) FROM lease_events")" = 6
pid=$(worker_pid)
check "all but the handover came from the notifier worker (pid $pid)" \
	test "$(grep -c "received from server process with PID $pid\.$" "$root/all.listen")" = "$((expected - 1))"
check "the handover came from its own transaction (its successor waits for it)" \
	grep -q '"event":"handover".* received from server process with PID [0-9]*\.$' "$root/all.listen"
check "... not from the worker" \
	test "$(grep '"event":"handover"' "$root/all.listen" | grep -c "PID $pid\.$")" = 0

# --- nothing for a change that did not commit --------------------------------
q "CREATE TABLE skew (k int)" >/dev/null
q "CREATE TABLE parent (id int PRIMARY KEY)" >/dev/null
q "CREATE TABLE child (id int REFERENCES parent DEFERRABLE INITIALLY DEFERRED)" >/dev/null
psql -X -q >"$root/aborts.out" 2>&1 <<'SQL' || true
BEGIN;
SELECT acquired FROM lease_acquire('ab-rollback', 'x', '60 s');
ROLLBACK;
BEGIN;
SELECT acquired FROM lease_acquire('ab-error', 'x', '60 s');
SELECT 1 / 0;
COMMIT;
BEGIN;
SAVEPOINT s;
SELECT acquired FROM lease_acquire('ab-savepoint', 'x', '60 s');
ROLLBACK TO SAVEPOINT s;
SELECT acquired FROM lease_acquire('ab-kept', 'x', '60 s');
COMMIT;
DO $$
BEGIN
	PERFORM lease_acquire('ab-plpgsql', 'x', '60 s');
	RAISE EXCEPTION 'undo';
EXCEPTION WHEN raise_exception THEN
	NULL;
END $$;
BEGIN;
SELECT acquired FROM lease_acquire('ab-deferred', 'x', '60 s');
INSERT INTO child VALUES (1);
COMMIT;
SQL
# A serialization failure raised by COMMIT itself, after the transaction
# has queued its entry: two sessions in write skew.
s1="$root/s1.fifo" s2="$root/s2.fifo"
mkfifo "$s1" "$s2"
psql -X -q -A -t <"$s1" >"$root/s1.out" 2>&1 &
p1=$!
psql -X -q -A -t <"$s2" >"$root/s2.out" 2>&1 &
p2=$!
exec 7>"$s1" 8>"$s2"
step() { echo "$2" >&"$1"; sleep 0.3; }
step 7 "BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT count(*) FROM skew WHERE k = 1;"
step 8 "BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT count(*) FROM skew WHERE k = 2;"
step 8 "SELECT acquired FROM lease_acquire('ab-serial', 'x', '60 s');"
step 7 "INSERT INTO skew VALUES (2);"
step 8 "INSERT INTO skew VALUES (1);"
step 7 "COMMIT;"
step 8 "SELECT 'before commit'; COMMIT;"
exec 7>&- 8>&-
wait "$p1" "$p2" || true
check "the write-skew session fails at COMMIT (40001)" \
	grep -Pzq 'before commit\n(.*\n)*ERROR:  could not serialize access' "$root/s2.out"
q "SELECT acquired FROM lease_acquire('ab-marker', 'x', '60 s')" >/dev/null
check "the committed ones arrive" listen_wait all 2 'ab-\(kept\|marker\)'
sleep 1
check "nothing for ROLLBACK, an error, a rolled-back savepoint or PL/pgSQL block, a failed deferred check, a failed COMMIT" \
	test "$(listen_count all 'ab-\(rollback\|error\|savepoint\|plpgsql\|deferred\|serial\)')" = 0
check "... and lease_events agrees" \
	test "$(q "SELECT string_agg(name, ',' ORDER BY name) FROM lease_events WHERE name LIKE 'ab-%'")" = "ab-kept,ab-marker"

# --- PREPARE TRANSACTION is refused, as for NOTIFY ----------------------------
out=$(psql -X -q -v VERBOSITY=verbose 2>&1 <<'SQL' || true
BEGIN;
SELECT acquired FROM lease_acquire('prepared', 'x', '60 s');
PREPARE TRANSACTION 'p1';
SQL
)
check "PREPARE after a lease change: 0A000, and it says why" \
	grep -q "0A000: cannot PREPARE a transaction that has changed a lease" <<<"$out"
check "... nothing prepared, nothing changed" \
	test "$(q "SELECT (SELECT count(*) FROM pg_prepared_xacts) + (SELECT count(*) FROM leases WHERE name = 'prepared')")" = 0

# --- pg_lease.notify_mode = commit: the changing transaction sends ------------
out=$(psql -X -q -A -t 2>&1 <<'SQL'
LISTEN pg_lease;
SET pg_lease.notify_mode = commit;
SELECT 'me ' || pg_backend_pid();
SELECT acquired FROM lease_acquire('mode-commit', 'x', '60 s');
SQL
)
me=$(sed -n 's/^me //p' <<<"$out")
check "notify_mode = commit: sent by the session's own backend" \
	grep -q "mode-commit.*received from server process with PID $me\.$" <<<"$out"

# --- the worker dies: it comes back and sends what waited ---------------------
old=$(worker_pid)
q "SELECT pg_terminate_backend($old)" >/dev/null
q "SELECT acquired FROM lease_acquire('after-term', 'x', '60 s')" >/dev/null
new_worker() { wait_worker "$1" >/dev/null; }
check "a terminated worker is started again" new_worker "$old"
check "... and sends what was committed while it was away" listen_wait all 1 after-term
listen_stop all

old=$(worker_pid)
kill -KILL "$old"
# the postmaster restarts every backend after a crash
deadline=$((SECONDS + 30))
until q "SELECT 1" >/dev/null 2>&1 || [ $SECONDS -gt $deadline ]; do sleep 0.2; done
listen_start crash
q "SELECT acquired FROM lease_acquire('after-kill', 'x', '60 s')" >/dev/null
check "after kill -9 of the worker (a crash restart), notifications arrive again" \
	listen_wait crash 1 after-kill
check "... from a new worker" new_worker "$old"
listen_stop crash

# --- DROP DATABASE is not held up by the database's worker -------------------
q "CREATE DATABASE other" >/dev/null
PGDATABASE=other q "CREATE EXTENSION pg_lease" >/dev/null
PGDATABASE=other q "SELECT acquired FROM lease_acquire('other', 'x', '60 s')" >/dev/null
other_worker() { PGDATABASE=other wait_worker >/dev/null; }
check "a worker per database" other_worker
start=$SECONDS
check "DROP DATABASE of a database with a worker succeeds" q "DROP DATABASE other"
check "... at once (not after its 5 s wait for sessions)" test $((SECONDS - start)) -le 3
check "... and its worker is gone" \
	test "$(q "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_lease notifier' AND datname IS DISTINCT FROM 'postgres'")" = 0

# --- a template database notifies by itself: CREATE DATABASE may copy it ---
q "CREATE DATABASE tpl IS_TEMPLATE true" >/dev/null
PGDATABASE=tpl q "CREATE EXTENSION pg_lease" >/dev/null
out=$(PGDATABASE=tpl psql -X -q -A -t 2>&1 <<'SQL'
LISTEN pg_lease;
SELECT 'me ' || pg_backend_pid();
SELECT acquired FROM lease_acquire('in-template', 'x', '60 s');
SQL
)
me=$(sed -n 's/^me //p' <<<"$out")
check "a template database: no worker, the changing session sends" \
	grep -q "in-template.*received from server process with PID $me\.$" <<<"$out"
check "... and CREATE DATABASE ... TEMPLATE it works" q "CREATE DATABASE from_tpl TEMPLATE tpl"
pg_cluster_stop nt

# --- a full queue: the committing transaction sends, in order ---------------
pg_cluster_start small -c shared_preload_libraries=pg_lease -c pg_lease.notify_queue_size=8
q "CREATE EXTENSION pg_lease" >/dev/null
listen_start full
q "SELECT acquired FROM lease_acquire('warm', 'x', '60 s')" >/dev/null
listen_wait full 1 warm
pid=$(worker_pid)
# stop the worker while it sleeps, never inside the queue's lock
for _ in $(seq 1 50); do
	if grep -q epoll "/proc/$pid/wchan"; then
		kill -STOP "$pid"
		break
	fi
	sleep 0.1
done
start=$SECONDS
for i in $(seq 1 30); do
	n=full-a
	[ $((i % 6)) -eq 0 ] && n=full-b
	echo "SELECT epoch FROM lease_acquire('$n', 'h', '60 s') \\gset"
	echo "SELECT lease_release('$n', 'h', :epoch);"
done | timeout 60 psql -X -q -v ON_ERROR_STOP=1 >/dev/null
check "with the worker stopped and the queue full, 60 commits do not wait" test $((SECONDS - start)) -le 20
sleep 1
while_stopped=$(listen_count full 'full-')
check "... the committing transactions sent $while_stopped of their notifications themselves" \
	test "$while_stopped" -gt 0
kill -CONT "$pid"
check "once the worker runs again, all 60 have arrived" listen_wait full 60 'full-'
sleep 0.5
check "... each once, in per-lease order" compare_history full '^full-'
listen_stop full
pg_cluster_stop small

# --- without shared_preload_libraries: NOTIFY from the changing transaction --
pg_cluster_start plain
q "CREATE EXTENSION pg_lease" >/dev/null
out=$(psql -X -q -A -t 2>&1 <<'SQL'
LISTEN pg_lease;
SELECT 'me ' || pg_backend_pid();
SELECT epoch FROM lease_acquire('plain', 'x', '60 s') \gset
SELECT lease_release('plain', 'x', :epoch);
SELECT 'end';
SQL
)
me=$(sed -n 's/^me //p' <<<"$out")
check "not preloaded: grant and release notified by the changing session itself" \
	test "$(grep -c "payload \"{.*plain.*received from server process with PID $me\.$" <<<"$out")" = 2
check "... no worker" test "$(q "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_lease notifier'")" = 0
out=$(psql -X -q -v VERBOSITY=verbose 2>&1 <<'SQL' || true
BEGIN;
SELECT acquired FROM lease_acquire('prepared', 'x', '60 s');
PREPARE TRANSACTION 'p1';
SQL
)
check "... PREPARE after a lease change: PostgreSQL's own 0A000" grep -q "0A000" <<<"$out"

finish
