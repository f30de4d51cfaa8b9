#!/usr/bin/env bash
# lease_store_id() names the lease store, not the server process nor its
# timeline: the same after a restart (clean and immediate) and on a
# streaming standby promoted to primary (pg_basebackup -R, pg_ctl promote),
# so downstream floors keyed by it keep their meaning after a failover.
# Another database of the same cluster, and another cluster, differ.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

pg_cluster_start primary
q "CREATE EXTENSION pg_lease" >/dev/null
id=$(q "SELECT lease_store_id()")
check "lease_store_id() is not empty ($id)" test -n "$id"
check "it is stable within a session and across sessions" \
	test "$(q "SELECT lease_store_id() = lease_store_id()")" = t -a "$(q "SELECT lease_store_id()")" = "$id"

# --- restarts --------------------------------------------------------------
pg_cluster_stop primary fast
pg_cluster_start primary
check "the same after a clean restart" test "$(q "SELECT lease_store_id()")" = "$id"
pg_cluster_stop primary immediate
pg_cluster_start primary
check "the same after a crash and restart" test "$(q "SELECT lease_store_id()")" = "$id"

# --- another database of the same cluster ------------------------------------
q "CREATE DATABASE other" >/dev/null
other=$(PGDATABASE=other psql -X -q -A -t -v ON_ERROR_STOP=1 \
	-c "CREATE EXTENSION pg_lease" -c "SELECT lease_store_id()" | tail -1)
check "another database of the cluster is another store ($other)" test "$other" != "$id"

# --- promotion of a streaming standby ----------------------------------------
pg_cluster_basebackup standby primary
pg_cluster_start standby
pg_cluster_use primary
lsn=$(q "SELECT pg_current_wal_lsn()")
pg_cluster_use standby
for _ in $(seq 1 100); do
	[ "$(q "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
	sleep 0.1
done
check "the standby is in recovery" test "$(q "SELECT pg_is_in_recovery()")" = t
check "a standby answers with its primary's store id" test "$(q "SELECT lease_store_id()")" = "$id"
timeline_before=$(q "SELECT timeline_id FROM pg_control_checkpoint()")
pg_cluster_stop primary immediate
pg_cluster_promote standby || true
check "the standby was promoted" test "$(q "SELECT pg_is_in_recovery()")" = f
q "CHECKPOINT" >/dev/null # the checkpoint record carries the new timeline
check "on a new timeline" test "$(q "SELECT timeline_id FROM pg_control_checkpoint()")" -gt "$timeline_before"
check "the promoted standby keeps the store id" test "$(q "SELECT lease_store_id()")" = "$id"
pg_cluster_stop standby fast
pg_cluster_start standby
check "and keeps it across its own restart" test "$(q "SELECT lease_store_id()")" = "$id"

# --- another cluster -----------------------------------------------------------
pg_cluster_start elsewhere
q "CREATE EXTENSION pg_lease" >/dev/null
check "another cluster (initdb) is another store" test "$(q "SELECT lease_store_id()")" != "$id"

finish
