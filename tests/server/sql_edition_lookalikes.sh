#!/usr/bin/env bash
# The SQL edition's eviction ends only the holders of its own fence lock
# (issue 50). A takeover behind a stalled fenced writer of an expired grant
# ends that writer (an evict event), found in pg_locks as an advisory lock
# of class 19539, the grant's key and objsubid 2 (two keys). Sessions of the
# same role holding advisory locks that look like it are the application's
# and are left alone, though the owner (pg_signal_backend) may end them:
#   - a two-key lock shared, of another first key (class) and the same
#     second key (pg_advisory_xact_lock_shared(19540, key));
#   - a two-key lock exclusive, held by the session, of another class and
#     the same second key (pg_advisory_lock(1, key));
#   - a one-key bigint lock shared whose high and low halves are the class
#     and the key (pg_advisory_xact_lock_shared(19539 << 32 | key): the
#     same classid and objid in pg_locks, objsubid 1).
# Each is open in its transaction, idle, through the takeover; after it,
# each is still there and commits. Timing bounds are generous; every wait
# is bounded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

sql_edition_cluster sql_edition_lookalikes
work=$PG_CLUSTER_ROOT
# Ending a stalled writer of another role needs pg_signal_backend (docs/sql.md).
q "GRANT pg_signal_backend TO app_owner" >/dev/null

sql_edition_install
q "CREATE TABLE jobs (id int PRIMARY KEY, note text, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs', 'tk')" >/dev/null
q "CREATE TABLE app_rows (who text)" >/dev/null	# not fenced
q "GRANT SELECT, INSERT, UPDATE ON jobs, app_rows TO app_user" >/dev/null
q "INSERT INTO lease_sql_settings VALUES ('pg_lease.takeover_timeout', '500ms')" >/dev/null
as_user() { PGUSER=app_user q "$1"; }

# --- a stalled writer of an expired grant, and the look-alikes -------------
e1=$(as_user "SELECT epoch FROM lease_acquire('tk', 'stalled', '5s')")
# the grant's fence lock: (19539, lease_sql_fence_key(epoch)), 40_fence_lock.sql
key=$(q "SELECT lease_sql_fence_key($e1)")
one_key=$(((19539 << 32) | (key & 0xffffffff)))
check "the grant's key ($key) and the one-key look-alike ($one_key) have the same numeric parts in pg_locks" \
	test "$(q "SELECT ($one_key::bigint >> 32)::oid || ' ' || ($one_key::bigint & 4294967295)::oid")" = \
	"19539 $(q "SELECT ($key::bigint & 4294967295)::oid")"

# open NAME LOCKSQL: a session of app_user's that takes LOCKSQL in a
# transaction, writes NAME into app_rows, waits idle in that transaction
# until $work/go (at most 120 s) and commits; its pid in $work/NAME.pid.
open()
{
	PGUSER=app_user psql -X -q -A -t -v ON_ERROR_STOP=1 >"$work/$1.out" 2>&1 <<SQL &
\o $work/$1.pid
SELECT pg_backend_pid();
\o
BEGIN;
$2;
INSERT INTO app_rows VALUES ('$1');
\! for i in \$(seq 1200); do [ -e $work/go ] && break; sleep 0.1; done
COMMIT;
SELECT 'committed';
SQL
	echo $! >"$work/$1.job"
}
open stalled "SELECT lease_use('tk', $e1); INSERT INTO jobs (id, note) VALUES (10, 'stalled')"
open other_class "SELECT pg_advisory_xact_lock_shared(19540, $key)"
open session_lock "SELECT pg_advisory_lock(1, $key)"
open one_key "SELECT pg_advisory_xact_lock_shared($one_key::bigint)"
sessions="stalled other_class session_lock one_key"
# pid NAME: the session's backend pid once it is idle in its transaction
pid() { head -1 "$work/$1.pid"; }
for s in $sessions; do
	idle_in_transaction_pid "$work/$s.pid" >/dev/null
	check "the $s session is idle in its transaction ($(tr '\n' ' ' <"$work/$s.out"))" \
		test "$(PGUSER=postgres q "SELECT state FROM pg_stat_activity WHERE pid = $(pid "$s" || echo 0)")" = "idle in transaction"
done
check "the writer holds the grant's fence lock" \
	test "$(q "SELECT count(*) FROM lease_writers WHERE name = 'tk' AND epoch = $e1 AND granted AND pid = $(pid stalled)")" = 1
check "the look-alikes hold their locks: classid, objid, objsubid, mode as expected" \
	test "$(PGUSER=postgres q "SELECT string_agg(l.classid || ' ' || (l.objid = ($key::bigint & 4294967295)::oid) || ' ' || l.objsubid || ' ' || l.mode,
		',' ORDER BY l.classid, l.objsubid) FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
		AND l.pid IN ($(pid other_class), $(pid session_lock), $(pid one_key))")" = \
	"1 true 2 ExclusiveLock,19539 true 1 ShareLock,19540 true 2 ShareLock"
for _ in $(seq 300); do  # the grant expires (ttl 5 s)
	[ "$(q "SELECT expires_at < clock_timestamp() FROM leases WHERE name = 'tk'")" = t ] && break
	sleep 0.1
done
check "the grant has expired" test "$(q "SELECT expires_at < clock_timestamp() FROM leases WHERE name = 'tk'")" = t

# --- the takeover ends the writer, and only the writer ------------------------
e2=$(PGUSER=app_user timeout 60 psql -X -q -A -t -v ON_ERROR_STOP=1 \
	-c "SELECT epoch FROM lease_acquire('tk', 'taker', '5s') WHERE acquired" 2>"$work/takeover.err" || true)
check "the takeover succeeds with a larger epoch (${e2:-none}: $(head -c 300 "$work/takeover.err"))" \
	test "${e2:-0}" -gt "$e1"
check "the writer's eviction is recorded (holder, epoch, pid)" \
	test "$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND holder = 'stalled' AND epoch = $e1 AND pid = $(pid stalled)")" = 1
check "no other session's eviction is recorded (evict events' pids: $(q "SELECT string_agg(pid::text, ' ') FROM lease_events WHERE event = 'evict'"); the writer's $(pid stalled))" \
	test "$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND pid <> $(pid stalled)")" = 0
for _ in $(seq 100); do
	[ -z "$(PGUSER=postgres q "SELECT 1 FROM pg_stat_activity WHERE pid = $(pid stalled)")" ] && break
	sleep 0.1
done
check "the writer is gone" test -z "$(PGUSER=postgres q "SELECT 1 FROM pg_stat_activity WHERE pid = $(pid stalled)")"
for s in other_class session_lock one_key; do
	check "the $s session is still there, idle in its transaction" \
		test "$(PGUSER=postgres q "SELECT state FROM pg_stat_activity WHERE pid = $(pid "$s")")" = "idle in transaction"
done

# --- the look-alikes commit; the writer's row never does -------------------------
touch "$work/go"
for s in $sessions; do
	status=0
	wait "$(cat "$work/$s.job")" || status=$?
	if [ "$s" = stalled ]; then
		check "the writer's session ended in error (psql exit $status)" test "$status" -ne 0
	else
		check "the $s session commits (psql exit $status: $(tr '\n' ' ' <"$work/$s.out"))" \
			test "$status/$(tail -1 "$work/$s.out")" = 0/committed
	fi
done
check "their rows are there, the writer's are not" \
	test "$(q "SELECT string_agg(who, ',' ORDER BY who) FROM app_rows")/$(q "SELECT count(*) FROM jobs")" = \
	"one_key,other_class,session_lock/0"

finish
