#!/usr/bin/env bash
# The 1.3 fence lock, seen from outside: it lives in the lock manager
# (pg_locks, lease_writers), never on the lease row; overlapping fenced
# transactions create no MultiXact; a deadlock between a fenced transaction
# and a change of holder is detected by PostgreSQL and names the lease; a
# transaction may fence many leases (one lock each) or, past the lock
# table, fails with a clear error and writes nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

work=$PG_CLUSTER_ROOT
pg_cluster_start fencelock
q "CREATE EXTENSION pg_lease" >/dev/null
q "CREATE TABLE jobs (id int, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs', 'fl')" >/dev/null
epoch=$(q "SELECT epoch FROM lease_acquire('fl', 'leader', '5min')")

# wait_for SQL: at most 20 s for SQL to return t (the observation is
# retried, never the assertion).
wait_for()
{
	local i
	for i in $(seq 200); do
		[ "$(q "$1")" = t ] && return 0
		sleep 0.1
	done
	return 1
}

# --- overlapping fenced transactions: lock manager only, no MultiXact --------
next_multixact() { q "CHECKPOINT" >/dev/null; q "SELECT next_multixact_id FROM pg_control_checkpoint()"; }
before=$(next_multixact)
pids=()
for i in $(seq 8); do
	psql -X -q -A -t -v ON_ERROR_STOP=1 >"$work/w$i.out" 2>&1 <<SQL &
BEGIN;
SET LOCAL pg_lease.epoch = '$epoch';
INSERT INTO jobs VALUES ($i);
SELECT pg_sleep(2);
COMMIT;
SQL
	pids+=($!)
done
check "8 overlapping fenced transactions hold the fence lock together (lease_writers)" \
	wait_for "SELECT count(*) = 8 FROM lease_writers WHERE name = 'fl' AND epoch = $epoch AND granted"
check "... visible in pg_locks as advisory locks of class 19539, in ShareLock" \
	test "$(q "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 19539 AND mode = 'ShareLock' AND granted")" = 8
check "... and none of them locks the lease row" \
	test "$(q "SELECT count(*) FROM (SELECT 1 FROM leases WHERE name = 'fl' FOR UPDATE NOWAIT) l")" = 1
for p in "${pids[@]}"; do wait "$p"; done
check "the 8 fenced transactions committed" test "$(q "SELECT count(*) FROM jobs")" = 8
after=$(next_multixact)
check "they created no MultiXact (next id $before -> $after)" test "$before" = "$after"
check "lease_writers is empty once they ended" test "$(q "SELECT count(*) FROM lease_writers")" = 0

# --- a deadlock with a change of holder is detected and names the lease ------
q "CREATE TABLE plain (id int PRIMARY KEY, v int)" >/dev/null
q "INSERT INTO plain VALUES (1, 0)" >/dev/null
# The writer closes the cycle only once the revoke waits for the fence lock,
# and its own deadlock check comes later (deadlock_timeout 10 s against the
# revoke's 1 s): the revoke is the one that finds the deadlock, so its
# report carries the lease's name.
cat >"$work/wait_taker.sh" <<'WAIT'
for i in $(seq 400); do
	[ "$(psql -X -A -t -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 19539 AND mode = 'ExclusiveLock' AND NOT granted")" = 1 ] && exit 0
	sleep 0.05
done
exit 1
WAIT
psql -X -q -A -t >"$work/dl_writer.out" 2>&1 <<SQL &
SET deadlock_timeout = '10s';
BEGIN;
SELECT lease_use('fl', $epoch);
INSERT INTO jobs VALUES (100);
\! touch $work/dl_writer.locked
\! bash $work/wait_taker.sh
UPDATE plain SET v = 1 WHERE id = 1;
COMMIT;
SQL
writer=$!
timeout 20 bash -c "until [ -f $work/dl_writer.locked ]; do sleep 0.05; done"
PGOPTIONS="-c pg_lease.takeover_timeout=10s" psql -X -q -A -t >"$work/dl_taker.out" 2>&1 <<SQL &
BEGIN;
UPDATE plain SET v = 2 WHERE id = 1;
SELECT lease_revoke('fl');
COMMIT;
SQL
taker=$!
wait "$writer" || true
wait "$taker" || true
cat "$work/dl_writer.out" "$work/dl_taker.out" >"$work/dl.out"
check "a deadlock between a fenced writer and a revoke is detected" grep -q 'deadlock detected' "$work/dl.out"
check "... and the report names the lease and the grant" \
	grep -q "lease \"fl\" epoch $epoch" "$work/dl.out"
check "... and one side went on (the writer committed or the lease was revoked)" \
	test "$(q "SELECT count(*) FROM jobs WHERE id = 100") + $(q "SELECT count(*) FROM leases WHERE name = 'fl' AND holder IS NULL")" != "0 + 0"

# --- many leases in one transaction: one lock each ---------------------------
q "SELECT lease_revoke(name) FROM leases" >/dev/null
many()
{
	psql -X -q -A -t -v ON_ERROR_STOP=1 2>&1 <<SQL
CREATE TABLE IF NOT EXISTS many_jobs (id int, epoch bigint);
SELECT count(*) FROM (SELECT lease_acquire('many/' || i, 'h', '5min') FROM generate_series(1, $1) i) g;
BEGIN;
SELECT count(*) FROM (SELECT lease_use(name, epoch) FROM leases WHERE name LIKE 'many/%') u;
SELECT count(*) FROM lease_writers WHERE name LIKE 'many/%' AND pid = pg_backend_pid() AND granted;
INSERT INTO many_jobs VALUES (1);
COMMIT;
SQL
}
out=$(many 1000)
check "a transaction fences 1,000 leases under the default max_locks_per_transaction (1,000 locks held)" \
	grep -qx 1000 <<<"$(sed -n 3p <<<"$out")"
check "... and its write commits" test "$(q "SELECT count(*) FROM many_jobs")" = 1

pg_cluster_init small
cat >>"$(pg_cluster_dir small)/data/postgresql.conf" <<CONF
max_connections = 10
max_prepared_transactions = 0
max_locks_per_transaction = 10
CONF
pg_cluster_start small
q "CREATE EXTENSION pg_lease" >/dev/null
out=$(many 5000 || true)
check "past the lock table: a clear error (53200, out of shared memory, the hint names max_locks_per_transaction)" \
	grep -q 'max_locks_per_transaction' <<<"$out"
check "... raised while taking a fence lock, named" grep -q 'taking the fence lock of lease "many/' <<<"$out"
check "... and nothing was written" test "$(q "SELECT count(*) FROM many_jobs")" = 0
check "... and the server goes on" test "$(q "SELECT count(*) FROM leases WHERE name LIKE 'many/%'")" = 5000

finish
