#!/usr/bin/env bash
# Epochs never go back (SPEC "Changes in 1.5"), also where the WAL timeline,
# the epochs' high bits, starts again at 1 (a dump and restore onto a new
# cluster, pg_upgrade, pg_resetwal) and where an older dump brings back an
# older counter (restored on the same cluster).  The store is first moved to timeline 2
# (a promotion), so its epochs are above anything timeline 1 alone gives.
# After each move the first grant succeeds at once (the history's ids were
# dumped too) and its epoch is above every epoch recorded before; and a
# standby of the restored (or upgraded) cluster, promoted before it saw the
# first grant's move of the mark, still issues epochs above that grant's.  (pg_resetwal
# of PostgreSQL 15 never lowers the timeline; it is tried all the same.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

era() { echo $(($1 >> 47)); }
max_epoch() { q "SELECT greatest((SELECT max(epoch) FROM leases), (SELECT max(epoch) FROM lease_events))"; }
timeline() { q "SELECT timeline_id FROM pg_control_checkpoint()"; }
# grant NAME HOLDER: a new grant (whoever held it is revoked first); prints the epoch
grant() { q "SELECT lease_revoke('$1')" >/dev/null; q "SELECT epoch FROM lease_acquire('$1', '$2', '1h')"; }

# --- a store on timeline 2 ------------------------------------------------
pg_cluster_start old
q "CREATE EXTENSION pg_lease" >/dev/null
grant sched a >/dev/null
pg_cluster_stop old
pg_as_owner touch "$(pg_cluster_dir old)/data/standby.signal"
pg_cluster_start old
pg_cluster_promote old
for i in 1 2 3; do grant sched "a$i" >/dev/null; done
check "the store is on timeline 2" test "$(timeline)" = 2
old_max=$(max_epoch)
check "its newest epoch ($old_max) is of era 2" test "$(era "$old_max")" = 2
dump=$(pg_cluster_dir old)/store.dump
pg_as_owner "$PG_BIN/pg_dump" -Fc -f "$dump" -h 127.0.0.1 -p "$PGPORT" -U postgres postgres

# --- the dump restored in place, on the same system and timeline -----------
# the store goes on granting after the dump; the older dump is restored
# into a database of the same cluster: its counter is behind
dump_max=$old_max
for i in 4 5 6; do grant sched "a$i" >/dev/null; done
live_max=$(max_epoch)
q "CREATE DATABASE copy" >/dev/null
pg_as_owner "$PG_BIN/pg_restore" -d copy -h 127.0.0.1 -p "$PGPORT" -U postgres "$dump"
e_copy=$(PGDATABASE=copy grant sched copy)
check "restored on the same system, the first epoch ($e_copy) is above every epoch the store issued after the dump ($live_max)" \
	test "$e_copy" -gt "$live_max"
old_max=$live_max

# --- dump and restore onto a new cluster (timeline 1) -----------------------
pg_cluster_start new
pg_as_owner "$PG_BIN/pg_restore" -d postgres -h 127.0.0.1 -p "$PGPORT" -U postgres "$dump"
check "the new cluster is on timeline 1" test "$(timeline)" = 1
check "the restored history is there" test "$(max_epoch)" = "$dump_max"
# its standby, stopped before the first grant: it never sees the mark move
pg_cluster_basebackup standby new
pg_cluster_use new
q "SELECT lease_revoke('sched')" >/dev/null
e_restored=$(q "SELECT epoch FROM lease_acquire('sched', 'restored', '1h') WHERE acquired")
check "the first grant after the restore succeeds" test -n "$e_restored"
check "its epoch ($e_restored) is above every restored one ($old_max)" test "$e_restored" -gt "$old_max"
check "so is a first grant of a new name" test "$(grant fresh r)" -gt "$old_max"
check "the history took the grants (ids go on after the restored ones)" \
	test "$(q "SELECT count(*) FROM lease_events WHERE holder IN ('restored', 'r')")" = 2
check "the mark names the new system" \
	test "$(q "SELECT system_identifier = (SELECT system_identifier FROM pg_control_system())::bigint FROM lease_epoch_mark")" = t
restored_max=$(max_epoch)
pg_cluster_stop new immediate

# --- that standby, promoted without the mark's move ------------------------
pg_cluster_start standby
pg_cluster_promote standby
e_standby=$(grant sched standby)
check "the promoted standby's epoch ($e_standby) is above the restored primary's ($restored_max)" \
	test "$e_standby" -gt "$restored_max"

# --- pg_resetwal (which keeps the timeline here, 15, but resets the WAL) -----
before=$(max_epoch)
pg_cluster_stop standby
data=$(pg_cluster_dir standby)/data
seg=$(pg_as_owner "$PG_BIN/pg_controldata" -D "$data" | sed -n "s/^Latest checkpoint's REDO WAL file: *//p")
pg_as_owner "$PG_BIN/pg_resetwal" -f -l "00000001${seg:8:8}$(printf %08X $((16#${seg:16:8} + 4)))" "$data" >/dev/null
pg_cluster_start standby
e_reset=$(grant sched reset)
check "after pg_resetwal the timeline did not go up (so the mark, not a new timeline, keeps epochs growing)" \
	test "$(timeline)" = 2
check "the first epoch after pg_resetwal ($e_reset) is above every earlier one ($before)" test "$e_reset" -gt "$before"
pg_cluster_stop standby

# --- pg_upgrade of the timeline-2 store -----------------------------------
pg_cluster_use old
pg_cluster_stop old
pg_cluster_init upgraded
up=$(pg_cluster_dir upgraded)
(cd "$up" && pg_as_owner "$PG_BIN/pg_upgrade" -b "$PG_BIN" -B "$PG_BIN" -U postgres \
	-d "$(pg_cluster_dir old)/data" -D "$up/data" -p "$(pg_free_port)" -P "$(pg_free_port)" >"$up/pg_upgrade.log" 2>&1) ||
	{ tail -30 "$up/pg_upgrade.log" >&2; exit 1; }
pg_cluster_start upgraded
check "the upgraded cluster is on timeline 1" test "$(timeline)" = 1
check "the upgraded store kept its history" test "$(max_epoch)" = "$live_max"
# its standby, stopped before the first grant (pg_upgrade keeps the tables'
# oids but not the system identifier)
pg_cluster_basebackup upstandby upgraded
pg_cluster_use upgraded
e_upgraded=$(grant sched upgraded)
check "the first epoch after pg_upgrade ($e_upgraded) is above every earlier one ($old_max)" test "$e_upgraded" -gt "$old_max"
pg_cluster_stop upgraded immediate
pg_cluster_start upstandby
pg_cluster_promote upstandby
e_upstandby=$(grant sched upstandby)
check "the upgraded store's standby, promoted without the mark's move, issues a larger epoch ($e_upstandby > $e_upgraded)" \
	test "$e_upstandby" -gt "$e_upgraded"

finish
