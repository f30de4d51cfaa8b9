#!/usr/bin/env bash
# A session keeps its lease row across transactions (pg_lease preloaded,
# extension/fence_cache.c) only where every change bumps the lease's
# counter: never on a standby, whose replayed changes bump nothing.  A
# session that declared a token on a standby and lives on through the
# standby's promotion must see the release that was replayed meanwhile:
# its write with the released token is refused.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

pg_cluster_start primary -c shared_preload_libraries=pg_lease
q "CREATE EXTENSION pg_lease" >/dev/null
q "CREATE TABLE kp_jobs (id int, epoch bigint)" >/dev/null
q "SELECT lease_fence('kp_jobs', 'kp')" >/dev/null
epoch=$(q "SELECT epoch FROM lease_acquire('kp', 'a', '1h')")

pg_cluster_basebackup standby primary
pg_cluster_start standby -c shared_preload_libraries=pg_lease
replayed()
{
	local lsn
	pg_cluster_use primary
	lsn=$(q "SELECT pg_current_wal_lsn()")
	pg_cluster_use standby
	for _ in $(seq 1 200); do
		[ "$(q "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && return 0
		sleep 0.1
	done
	return 1
}
check "the standby replayed the grant" replayed

# One session on the standby for the whole test, fed through a FIFO.
work=$(mktemp -d /tmp/pg_lease_kept_row.XXXXXX)
mkfifo "$work/in"
psql -X -q -A -t -v ON_ERROR_STOP=0 <"$work/in" >"$work/out" 2>&1 &
session=$!
exec 3>"$work/in"
trap 'exec 3>&-; wait $session 2>/dev/null || true; rm -rf "$work"; pg_cluster_stop_all' EXIT
# say SQL MARKER: run SQL in the session, wait (at most 30 s) for MARKER
say()
{
	echo "$1" >&3
	echo "SELECT '$2';" >&3
	for _ in $(seq 1 300); do
		grep -qx "$2" "$work/out" && return 0
		sleep 0.1
	done
	return 1
}
check "the standby session declares the token and reads the grant" \
	say "BEGIN; SELECT lease_use('kp', $epoch); COMMIT;" used
check "... twice, in a new transaction" \
	say "BEGIN; SELECT lease_use('kp', $epoch); COMMIT;" used_again

pg_cluster_use primary
q "SELECT lease_release('kp', 'a', $epoch)" >/dev/null
check "the standby replayed the release" replayed
pg_as_owner "$PG_BIN/pg_ctl" -D "$(pg_cluster_dir standby)/data" -w promote >/dev/null
pg_cluster_use standby
for _ in $(seq 1 100); do
	[ "$(q "SELECT pg_is_in_recovery()")" = f ] && break
	sleep 0.1
done
check "the standby was promoted" test "$(q "SELECT pg_is_in_recovery()")" = f

check "the same session, promoted, writes with the released token" \
	say "BEGIN; SET LOCAL pg_lease.epoch = '$epoch'; INSERT INTO kp_jobs VALUES (1, NULL); COMMIT;" wrote
check "... and is refused: LS002, the lease is not held" \
	grep -q 'lease "kp" is not held' "$work/out"
check "... nothing was written" test "$(q "SELECT count(*) FROM kp_jobs")" = 0
cat "$work/out" | sed 's/^/  session: /'

finish
