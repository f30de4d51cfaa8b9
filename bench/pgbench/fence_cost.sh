#!/usr/bin/env bash
# What the fence costs the server per transaction, beyond time: WAL bytes
# and MultiXacts.  A fenced one-row INSERT transaction (BEGIN, SET LOCAL
# pg_lease.epoch, INSERT, COMMIT) against the same transaction on an
# unfenced table (the same SET LOCAL, the same row), each run alone by pgbench at 16 and
# 64 clients on a fresh server (fsync on, preloaded).  WAL from
# pg_current_wal_lsn() around the run; MultiXacts from the control file's
# next MultiXact id around it (CHECKPOINT first).  Since 1.3 the fence lock
# lives in the lock manager: the goal is no MultiXact and no WAL of its own.
#
#   bench/pgbench/fence_cost.sh [SECONDS] [CLIENTS...]      (default 10 s, 16 64)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:-10}
shift $(($# < 1 ? $# : 1))
source "$here/pgbench_common.sh" "$secs" 1 "$@"
[ $# -gt 0 ] || clients=(16 64)
pgbench_cluster_init cost
echo "shared_preload_libraries = 'pg_lease'" | pg_as_owner tee -a "$(pg_cluster_dir cost)/data/postgresql.conf" >/dev/null
pg_cluster_start cost

psql -X -q -v ON_ERROR_STOP=1 -f "$here/fence_tables.sql" >/dev/null
epoch=$(psql -X -A -t -c "SELECT epoch FROM leases WHERE name = 'f'")
# The same row on both sides: the fence stamps the token into the fenced
# row's epoch column, the unfenced row gets the same value written.
pgbench_fenced_pair "$epoch"

echo "| clients | transaction | transactions | WAL bytes / tx | MultiXacts / tx |"
echo "|---:|---|---:|---:|---:|"
declare -A wal
for c in "${clients[@]}"; do
	for t in unfenced fenced; do
		read -r n _ bytes mx <<<"$(pgbench_run "$t" "$c")"
		wal[$t]=$(awk -v b="$bytes" -v n="$n" 'BEGIN { printf "%.1f", b / n }')
		echo "| $c | $t | $n | ${wal[$t]} | $(awk -v m="$mx" -v n="$n" 'BEGIN { printf "%.3f", m / n }') |"
	done
	echo "| $c | fenced / unfenced WAL | | $(ratio "${wal[fenced]}" "${wal[unfenced]}")x | |"
done
echo "(pgbench, ${secs}s per run, fsync on, preloaded; every transaction checked to have written its row)"
