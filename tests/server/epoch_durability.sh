#!/usr/bin/env bash
# Epochs never go back: across an immediate shutdown (crash) and restart,
# and across promotion of an asynchronous standby that never received the
# old primary's newest grants (the WAL timeline in the high bits).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

pg_cluster_start primary
q "CREATE EXTENSION pg_lease" >/dev/null
max_epoch() { q "SELECT max(epoch) FROM lease_events"; }

# --- crash and restart --------------------------------------------------
# synchronous_commit=off in the session must not make a grant volatile
e1=$(PGOPTIONS='-c synchronous_commit=off' q "SELECT epoch FROM lease_acquire('crash', 'a', '1h')")
pg_cluster_stop primary immediate
pg_cluster_start primary
check "a grant acknowledged with synchronous_commit=off survives a crash" \
	test "$(q "SELECT epoch FROM leases WHERE name = 'crash' AND holder = 'a'")" = "$e1"
q "SELECT lease_revoke('crash')" >/dev/null
e2=$(q "SELECT epoch FROM lease_acquire('crash', 'b', '1h')")
check "the first grant after restart is larger ($e2 > $e1)" test "$e2" -gt "$e1"

# --- promotion of an asynchronous standby --------------------------------
pg_cluster_basebackup standby primary
pg_cluster_start standby
pg_cluster_use primary
e3=$(q "SELECT epoch FROM lease_acquire('failover', 'a', '1h')")
lsn=$(q "SELECT pg_current_wal_lsn()")
pg_cluster_use standby
for _ in $(seq 1 100); do
	[ "$(q "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && break
	sleep 0.1
done
check "the standby replayed grant $e3" test "$(q "SELECT epoch FROM leases WHERE name = 'failover'")" = "$e3"

# the standby stops receiving; the primary goes on granting (more than the
# 32 values a sequence logs ahead), then dies
pg_cluster_stop standby fast
pg_cluster_use primary
for i in $(seq 1 40); do
	q "SELECT lease_revoke('failover'); SELECT epoch FROM lease_acquire('failover', 'p$i', '1h')" >/dev/null
done
old_max=$(max_epoch)
old_timeline=$(q "SELECT timeline_id FROM pg_control_checkpoint()")
pg_cluster_stop primary immediate

pg_cluster_start standby
check "the standby lacks the newest grants" test "$(q "SELECT max(epoch) FROM lease_events")" -lt "$old_max"
pg_cluster_promote standby
q "SELECT lease_revoke('failover')" >/dev/null
e4=$(q "SELECT epoch FROM lease_acquire('failover', 'promoted', '1h')")
check "the first epoch after promotion ($e4) exceeds every epoch of the old primary ($old_max)" \
	test "$e4" -gt "$old_max"
check "its high bits are the new timeline" \
	test "$(q "SELECT $e4 >> 47")" -gt "$old_timeline"
check "the counter alone would have reissued an old epoch" \
	test "$(q "SELECT ($e4 & ((1::bigint << 47) - 1)) <= ($old_max & ((1::bigint << 47) - 1))")" = t
e5=$(q "SELECT epoch FROM lease_acquire('other', 'x', '1h')")
check "epochs keep increasing on the new primary" test "$e5" -gt "$e4"

finish
