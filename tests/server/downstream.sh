#!/usr/bin/env bash
# Downstream fences across two clusters: the lease store holds the lease,
# the downstream database fences a table by the lease's floor.  The paused
# old leader's write in flight during the new leader's raise is ended and
# never commits; its later writes are refused (LS001); the new leader's
# pass.  Floors survive a crash of the downstream, also when the session
# that raised (with lease_raise, or with a fenced write of a named token)
# had synchronous_commit off.  1.5: an unnamed token never moves a floor.
# A lease_raise stalled idle in its transaction is ended by a higher raise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

pg_cluster_start store
q "CREATE EXTENSION pg_lease" >/dev/null
store_id=$(q "SELECT lease_store_id()")
store_env() { pg_cluster_use store; }

pg_cluster_start down
q "CREATE EXTENSION pg_lease" >/dev/null
q "CREATE TABLE jobs (id int, who text, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs', 'sched', store => \$\$$store_id\$\$)" >/dev/null
down_port=$PGPORT
down() { PGPORT=$down_port "$@"; }
sql_state() { psql -X -q -v VERBOSITY=verbose -c "$1" 2>&1 | grep -o 'LS00[0-9]' | head -1 || true; }

check "the store id is the store's own (system identifier/database)" \
	grep -Eq '^[0-9]+/postgres$' <<<"$store_id"
check "the downstream's own id differs from the store's" test "$(q "SELECT lease_store_id()")" != "$store_id"

# --- leader A: its first write raises the floor ------------------------------
store_env
epoch_a=$(q "SELECT epoch FROM lease_acquire('sched', 'a', '1s')")
pg_cluster_use down
check "A's first write with its unnamed token is refused (LS003): it raised no floor" \
	test "$(sql_state "BEGIN; SET LOCAL pg_lease.epoch = $epoch_a; INSERT INTO jobs VALUES (1, 'a', NULL); COMMIT;")" = LS003
check "A's first write with its token named for the lease passes and raises the floor" \
	q "BEGIN; SELECT lease_use('sched', $epoch_a); INSERT INTO jobs VALUES (1, 'a', NULL); COMMIT;"
check "the floor is A's epoch" test "$(q "SELECT epoch FROM lease_floors WHERE store = \$\$$store_id\$\$ AND name = 'sched'")" = "$epoch_a"

# --- A pauses inside a transaction with a write in flight ---------------------
inflight=$PG_CLUSTER_ROOT/inflight.out
psql -X -q -v ON_ERROR_STOP=1 >"$inflight" 2>&1 <<SQL &
BEGIN;
SET LOCAL pg_lease.epoch = $epoch_a;
INSERT INTO jobs VALUES (2, 'a in flight', NULL);
SELECT pg_sleep(30);
INSERT INTO jobs VALUES (3, 'a after the pause', NULL);
COMMIT;
SQL
inflight_pid=$!
for _ in $(seq 100); do
	[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%'")" = 1 ] && break
	sleep 0.1
done

# --- A's lease expires; B takes it and raises the floor before working --------
sleep 1.2
store_env
epoch_b=$(q "SELECT epoch FROM lease_acquire('sched', 'b', '30s') WHERE acquired")
check "B holds the lease with a newer epoch" test "$epoch_b" -gt "$epoch_a"
pg_cluster_use down
start=$(date +%s%N)
check "B's raise returns true" test "$(PGOPTIONS='-c pg_lease.takeover_timeout=500ms' q "SELECT lease_raise(\$\$$store_id\$\$, 'sched', $epoch_b)")" = t
raise_ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "the raise waited for A's open transaction, then ended it (${raise_ms} ms; bound: takeover_timeout 500 ms + eviction)" \
	test "$raise_ms" -ge 400 -a "$raise_ms" -lt 6000
wait "$inflight_pid" || true
check "A's transaction with the write in flight was ended" grep -q 'canceling statement' "$inflight"
check "none of A's paused writes committed" test "$(q "SELECT count(*) FROM jobs WHERE id IN (2, 3)")" = 0
check "the eviction is recorded downstream" \
	test "$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND name = 'sched' AND epoch = $epoch_a")" = 1

# --- A wakes up and writes again: refused; B writes --------------------------
check "A's later write is refused with LS001" \
	test "$(sql_state "INSERT INTO jobs VALUES (4, 'a awake', $epoch_a)")" = LS001
check "A's write with a declared token is refused too" \
	test "$(sql_state "BEGIN; SELECT lease_use('sched', $epoch_a); INSERT INTO jobs VALUES (4, 'a awake', NULL); COMMIT;")" = LS001
check "B's write passes" q "BEGIN; SET LOCAL pg_lease.epoch = $epoch_b; INSERT INTO jobs VALUES (5, 'b', NULL); COMMIT;"

# --- floors survive a crash of the downstream -------------------------------
store_env
q "SELECT lease_release('sched', 'b', $epoch_b)" >/dev/null
epoch_c=$(q "SELECT epoch FROM lease_acquire('sched', 'c', '30s') WHERE acquired")
pg_cluster_use down
check "C's raise, with synchronous_commit off in its session, returns true" \
	test "$(PGOPTIONS='-c synchronous_commit=off' q "SELECT lease_raise(\$\$$store_id\$\$, 'sched', $epoch_c)")" = t
pg_cluster_stop down immediate
pg_cluster_start down -c wal_writer_delay=10s
check "after a crash the floor is still C's epoch" \
	test "$(q "SELECT epoch FROM lease_floors WHERE store = \$\$$store_id\$\$ AND name = 'sched'")" = "$epoch_c"
check "after a crash B's write is refused" \
	test "$(sql_state "INSERT INTO jobs VALUES (6, 'b after crash', $epoch_b)")" = LS001
check "after a crash C's write passes" q "INSERT INTO jobs VALUES (7, 'c', $epoch_c)"

# a fenced write that raises the floor, acknowledged with synchronous_commit
# off (the WAL writer asleep for 10 s): the raise is durable all the same
store_env
q "SELECT lease_release('sched', 'c', $epoch_c)" >/dev/null
epoch_d=$(q "SELECT epoch FROM lease_acquire('sched', 'd', '30s') WHERE acquired")
pg_cluster_use down
check "D's fenced write with synchronous_commit off raises the floor" \
	env PGOPTIONS='-c synchronous_commit=off' psql -X -q -o /dev/null -v ON_ERROR_STOP=1 \
	-c "BEGIN; SELECT lease_use('sched', $epoch_d); INSERT INTO jobs VALUES (8, 'd', NULL); COMMIT;"
pg_cluster_stop down immediate
pg_cluster_start down
check "after a crash the floor is D's epoch" \
	test "$(q "SELECT epoch FROM lease_floors WHERE store = \$\$$store_id\$\$ AND name = 'sched'")" = "$epoch_d"
check "after a crash C's write is refused" \
	test "$(sql_state "INSERT INTO jobs VALUES (9, 'c after crash', $epoch_c)")" = LS001
check "the table holds exactly the writes that passed" \
	test "$(q "SELECT string_agg(id || ':' || who, ',' ORDER BY id) FROM jobs")" = "1:a,5:b,7:c,8:d"

# --- E's lease_raise stalls idle in its transaction; F's raise ends it -------
# (issue 52, item 3: F's raise once waited as long as E's transaction lasted)
store_env
q "SELECT lease_release('sched', 'd', $epoch_d)" >/dev/null
epoch_e=$(q "SELECT epoch FROM lease_acquire('sched', 'e', '30s') WHERE acquired")
q "SELECT lease_release('sched', 'e', $epoch_e)" >/dev/null
epoch_f=$(q "SELECT epoch FROM lease_acquire('sched', 'f', '30s') WHERE acquired")
pg_cluster_use down
stalled=$PG_CLUSTER_ROOT/stalled
psql -X -q -A -t >"$stalled.out" 2>&1 <<SQL &
BEGIN;
SELECT lease_raise(\$\$$store_id\$\$, 'sched', $epoch_e);
\o $stalled.pid
SELECT pg_backend_pid();
\o
\! sleep 8
COMMIT;
SQL
stalled_job=$!
idle_in_transaction_pid "$stalled.pid" >/dev/null
start=$(date +%s%N)
check "F's raise returns true" test "$(PGOPTIONS='-c pg_lease.takeover_timeout=500ms' q "SELECT lease_raise(\$\$$store_id\$\$, 'sched', $epoch_f)")" = t
raise_ms=$(( ($(date +%s%N) - start) / 1000000 ))
wait "$stalled_job" || true
check "it ended E's stalled raise after takeover_timeout (${raise_ms} ms; bound: takeover_timeout 500 ms + eviction)" \
	test "$raise_ms" -ge 400 -a "$raise_ms" -lt 6000
check "the eviction is recorded with E's epoch and pid; the floor is F's; E's write is refused (LS001)" \
	test "$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND name = 'sched' AND epoch = $epoch_e AND pid = $(head -1 "$stalled.pid" 2>/dev/null || echo 0)")/$(q "SELECT epoch FROM lease_floors WHERE store = \$\$$store_id\$\$ AND name = 'sched'")/$(sql_state "BEGIN; SELECT lease_use('sched', $epoch_e); INSERT INTO jobs VALUES (10, 'e', NULL); COMMIT;")" = "1/$epoch_f/LS001"

finish
