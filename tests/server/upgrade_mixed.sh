#!/usr/bin/env bash
# The update from 1.2 to 1.3 while backends that loaded the 1.2 library are
# still running (no preload, no restart): 1.2 backends lock the lease row
# for a fenced write and wait only for row locks in a change of holder;
# 1.3 backends lock grants in the lock manager.  Until no 1.2 backend can be
# left, both kinds must stop each other's stale writes:
#   - a 1.2 writer stalled in its transaction holds up a 1.3 takeover, which
#     ends it after pg_lease.takeover_timeout; its row never commits; no
#     other session is ended (bystanders in a transaction, connected before
#     and after the writer, and an idle old session);
#   - a 1.3 writer stalled in its transaction holds up a 1.2 takeover (the
#     1.3 writer keeps 1.2's row lock as well), which ends it; its row never
#     commits;
#   - an ALTER EXTENSION ... UPDATE run by a backend that loaded the 1.2
#     library is refused;
#   - once every session older than the update has ended, 1.3 writers take
#     no row lock any more.
# The 1.2 library is built from this repository's history, and both are
# installed into a private copy of PostgreSQL, never the system's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/../harness/private_postgres.sh"
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

work=$PG_CLUSTER_ROOT
private_postgres_make "$work/pg"
ttl=2

# --- the 1.2 library, from the commit before the control file left 1.2 ------
# (scripts/mutants.sh runs this from a copy of the tree: PGLEASE_GIT_DIR
# names the repository then)
gitdir=${PGLEASE_GIT_DIR:-$root}
last13=$(git -C "$gitdir" log -n1 --format=%H -S"default_version = '1.2'" -- extension/pg_lease.control)
[ -n "$last13" ] || { echo "upgrade_mixed: cannot find the 1.2 sources in git history" >&2; exit 1; }
mkdir -p "$work/old"
git -C "$gitdir" archive "$last13^" extension sql Makefile.pgxs | tar -x -C "$work/old"
grep -q "default_version = '1.2'" "$work/old/extension/pg_lease.control"
make -s -C "$work/old" -f Makefile.pgxs -j2 >"$work/old-build.log" 2>&1 || { cat "$work/old-build.log" >&2; exit 1; }
make -s -C "$work/old" -f Makefile.pgxs install DESTDIR="$work/pg/root" >>"$work/old-build.log" 2>&1
chmod -R a+rX "$work/pg"

pg_cluster_start mixed
q "CREATE EXTENSION pg_lease VERSION '1.2'" >/dev/null
q "CREATE TABLE jobs (id int PRIMARY KEY, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs', 'mx')" >/dev/null

# wait_file FILE: at most 30 s for a session's handshake file.
wait_file()
{
	local i
	for i in $(seq 600); do
		[ -f "$1" ] && return 0
		sleep 0.05
	done
	echo "upgrade_mixed: timed out waiting for $1" >&2
	return 1
}
# the psql line a session runs to wait for a handshake file (bounded: 30 s,
# or the seconds given)
wait_cmd() { echo "\\! timeout ${2:-30} bash -c 'until [ -f $work/$1 ]; do sleep 0.05; done'"; }
expire_wait() { sleep $((ttl + 1)); }

# bystander N: a session in a transaction with an xid, waiting; it must
# never be ended by a takeover that looks for the 1.2 writer's transaction
bystander()
{
	psql -X -q -A -t >"$work/by$1.out" 2>&1 <<SQL &
SELECT pg_backend_pid() \g $work/by$1.pid
BEGIN;
SELECT txid_current() > 0;
\! touch $work/by$1.ready
$(wait_cmd by.end 300)
COMMIT;
SELECT 'bystander alive';
SQL
	bystanders+=($!)
	wait_file "$work/by$1.ready"
}
bystanders=()
bystander 1

# --- two sessions that load the 1.2 library, then wait ----------------------
psql -X -q -A -t >"$work/o1.out" 2>&1 <<SQL &
SELECT pg_backend_pid() \g $work/o1.pid
SELECT lease_renew('mx-probe', 'p', 1);
\! touch $work/o1.ready
$(wait_cmd o1.write)
\set epoch1 \`cat $work/epoch1\`
BEGIN;
SELECT lease_use('mx', :epoch1);
INSERT INTO jobs VALUES (1, NULL);
\! touch $work/o1.wrote
$(wait_cmd o1.end)
COMMIT;
SQL
o1=$!
psql -X -q -A -t >"$work/o2.out" 2>&1 <<SQL &
SELECT pg_backend_pid() \g $work/o2.pid
SELECT lease_renew('mx-probe', 'p', 1);
\! touch $work/o2.ready
$(wait_cmd o2.update)
ALTER EXTENSION pg_lease UPDATE;
\! touch $work/o2.updated
$(wait_cmd o2.acquire)
DO \$\$
DECLARE g record; give_up timestamptz := clock_timestamp() + interval '15 s';
BEGIN
	LOOP
		g := lease_acquire('mx', 'old-taker', '30s');
		EXIT WHEN g.acquired OR clock_timestamp() > give_up;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RAISE NOTICE 'old-taker acquired %', g.acquired;
END
\$\$;
\! touch $work/o2.acquired
$(wait_cmd o2.end)
SQL
o2=$!
wait_file "$work/o1.ready"
wait_file "$work/o2.ready"
bystander 2

# --- the 1.3 library replaces the file; new sessions load it ----------------
make -s -C "$root" -f Makefile.pgxs install DESTDIR="$work/pg/root" >"$work/new-install.log" 2>&1
chmod -R a+rX "$work/pg"
maps() { q "SELECT pg_read_file('/proc/$1/maps')" | grep 'pg_lease\.so' | head -1; }
check "the old sessions run the replaced (1.2) library" grep -q 'pg_lease\.so (deleted)' <<<"$(maps "$(cat "$work/o1.pid")")"

touch "$work/o2.update"
wait_file "$work/o2.updated"
check "ALTER EXTENSION UPDATE in a session that loaded the 1.2 library is refused" \
	grep -q 'could not find function "lease_end_grant_writers"' "$work/o2.out"
check "still at 1.2 after the refused update" test "$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.2
q "ALTER EXTENSION pg_lease UPDATE TO '1.3'" >/dev/null
check "a new session updates to 1.3" test "$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.3
check "the update is recorded in lease_upgrades" test "$(q "SELECT count(*) FROM lease_upgrades WHERE version = '1.3'")" = 1

# --- a 1.2 writer stalls; a 1.3 takeover ends it -----------------------------
epoch1=$(q "SELECT epoch FROM lease_acquire('mx', 'a', '${ttl}s')")
echo "$epoch1" >"$work/epoch1"
touch "$work/o1.write"
wait_file "$work/o1.wrote"
expire_wait
start=$(date +%s%N)
epoch2=$(q "SELECT epoch FROM lease_acquire('mx', 'b', '${ttl}s') WHERE acquired")
took_ms=$((($(date +%s%N) - start) / 1000000))
check "1.3 takeover behind a stalled 1.2 writer is granted (${took_ms} ms)" test -n "$epoch2"
check "... after pg_lease.takeover_timeout, within 1 s + 5 s" test "$took_ms" -ge 900 -a "$took_ms" -le 6500
check "the stalled 1.2 writer was evicted (event with its pid)" \
	test "$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND epoch = $epoch1 AND pid = $(cat "$work/o1.pid")")" = 1
touch "$work/o1.end"
wait "$o1" || true
check "the stalled 1.2 writer's row never committed" test "$(q "SELECT count(*) FROM jobs WHERE id = 1")" = 0
others="$(cat "$work/by1.pid"), $(cat "$work/by2.pid"), $(cat "$work/o2.pid")"
check "no other session was ended: both bystanders and the idle old session are there" \
	test "$(q "SELECT count(*) FROM pg_stat_activity WHERE pid IN ($others)")" = 3
check "... and no eviction names them" \
	test "$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND pid IN ($others)")" = 0

# --- a 1.3 writer stalls; a 1.2 takeover must end it too ---------------------
psql -X -q -A -t >"$work/n1.out" 2>&1 <<SQL &
SELECT pg_backend_pid() \g $work/n1.pid
BEGIN;
SELECT lease_use('mx', $epoch2);
INSERT INTO jobs VALUES (2, NULL);
\! touch $work/n1.wrote
\! sleep $((ttl + 6))
COMMIT;
SQL
n1=$!
wait_file "$work/n1.wrote"
check "a 1.3 writer beside 1.2 sessions also holds 1.2's row lock" \
	grep -q 'could not obtain lock on row' <<<"$(q "SELECT 1 FROM leases WHERE name = 'mx' FOR UPDATE NOWAIT" 2>&1 || true)"
check "lease_writers shows the 1.3 writer under its grant" \
	test "$(q "SELECT name || ' ' || epoch || ' ' || granted FROM lease_writers WHERE pid = $(cat "$work/n1.pid")")" = "mx $epoch2 true"
expire_wait
touch "$work/o2.acquire"
wait_file "$work/o2.acquired"
wait "$n1" || true
check "the 1.2 takeover was granted" grep -q 'old-taker acquired t' "$work/o2.out"
check "the stalled 1.3 writer's row never committed" test "$(q "SELECT count(*) FROM jobs WHERE id = 2")" = 0
check "the stalled 1.3 writer was evicted by the 1.2 takeover" \
	test "$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND epoch = $epoch2 AND pid = $(cat "$work/n1.pid")")" = 1

# --- the old sessions end: 1.3 writers stop taking the row lock -------------
touch "$work/o2.end"
wait "$o2" || true
touch "$work/by.end"
wait "${bystanders[@]}" || true
check "the bystanders' transactions committed" test "$(cat "$work/by1.out" "$work/by2.out" | grep -c 'bystander alive')" = 2
q "SELECT lease_revoke('mx')" >/dev/null
epoch3=$(q "SELECT epoch FROM lease_acquire('mx', 'c', '30s')")
psql -X -q -A -t >"$work/n2.out" 2>&1 <<SQL &
BEGIN;
SELECT lease_use('mx', $epoch3);
INSERT INTO jobs VALUES (3, NULL);
\! touch $work/n2.wrote
$(wait_cmd n2.end)
COMMIT;
SQL
n2=$!
wait_file "$work/n2.wrote"
check "with no session older than the update left, a 1.3 writer takes no row lock" \
	test "$(q "SELECT count(*) FROM (SELECT 1 FROM leases WHERE name = 'mx' FOR UPDATE NOWAIT) l")" = 1
check "... and holds the grant's fence lock" \
	test "$(q "SELECT count(*) FROM lease_writers WHERE name = 'mx' AND epoch = $epoch3 AND granted")" = 1
touch "$work/n2.end"
wait "$n2"
check "its row commits" test "$(q "SELECT count(*) FROM jobs WHERE id = 3")" = 1

finish
