# Shared by the pgbench scripts (bench/pgbench/notify_cost.sh, bench/pgbench/pgbench_ratios.sh,
# the fence's cost scripts): their arguments, a throwaway server with
# default durability, the fenced transaction and its twin, and medians.
#
#   source bench/pgbench/pgbench_common.sh "$@"   # sets secs, rounds, clients, work, pgbench
#   pgbench_cluster_init NAME             # fsync and synchronous_commit on
#   pgbench_cluster_restart NAME MODE     # MODE plain, or preloaded (pg_lease)
#   pgbench_fenced_pair EPOCH             # $work/fenced.sql, $work/unfenced.sql
source "$(dirname "${BASH_SOURCE[0]}")/../../tests/harness/pg_cluster.sh"
secs=${1:-5}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
clients=("$@")
[ ${#clients[@]} -gt 0 ] || clients=(1 4 16)
work=$PG_CLUSTER_ROOT
pgbench=$PG_BIN/pgbench

pgbench_cluster_init()
{
	pg_cluster_init "$1"
	pg_as_owner tee -a "$(pg_cluster_dir "$1")/data/postgresql.conf" >/dev/null <<CONF
fsync = on
synchronous_commit = on
max_connections = 100
CONF
}

# pgbench_cluster_restart NAME plain|preloaded: NAME (re)started without, or
# with, shared_preload_libraries = 'pg_lease'.
pgbench_cluster_restart()
{
	pg_cluster_stop "$1"
	if [ "$2" = preloaded ]; then
		pg_cluster_start "$1" -c shared_preload_libraries=pg_lease
	else
		pg_cluster_start "$1"
	fi
}

# pgbench_fenced_pair EPOCH: one transaction written twice, for the tables
# fenced and unfenced (its twin): BEGIN and SET LOCAL pg_lease.epoch in one
# query, the INSERT, COMMIT (three round trips, as run_fenced sends them);
# the unfenced row gets the token's value written, as the fence stamps it.
pgbench_fenced_pair()
{
	cat >"$work/fenced.sql" <<SQL
BEGIN \\; SET LOCAL pg_lease.epoch = $1;
INSERT INTO fenced (payload) VALUES ('x');
COMMIT;
SQL
	cat >"$work/unfenced.sql" <<SQL
BEGIN \\; SET LOCAL pg_lease.epoch = $1;
INSERT INTO unfenced (payload, epoch) VALUES ('x', $1);
COMMIT;
SQL
}

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

q() { psql -X -A -t -v ON_ERROR_STOP=1 -c "$1"; }
next_multixact() { q "CHECKPOINT" >/dev/null; q "SELECT next_multixact_id FROM pg_control_checkpoint()"; }

# pgbench_run TABLE CLIENTS: runs $work/TABLE.sql for $secs seconds; prints
# "transactions tps wal_bytes multixacts", checked to have done the work
# (one new row of TABLE per transaction, no failure).
pgbench_run()
{
	local mx0 mx1 lsn0 lsn1 rows0 rows1 n tps
	mx0=$(next_multixact)
	rows0=$(q "SELECT count(*) FROM $1")
	lsn0=$(q "SELECT pg_current_wal_lsn()")
	"$pgbench" -n -c "$2" -j "$2" -T "$secs" -f "$work/$1.sql" >"$work/run.out" 2>&1 ||
		{ cat "$work/run.out" >&2; return 1; }
	lsn1=$(q "SELECT pg_current_wal_lsn()")
	mx1=$(next_multixact)
	rows1=$(q "SELECT count(*) FROM $1")
	n=$(awk '/^number of transactions actually processed/ { split($0, a, ": "); split(a[2], b, "/"); print b[1] }' "$work/run.out")
	tps=$(awk '/^tps = / { print $3; exit }' "$work/run.out")
	[ "$((rows1 - rows0))" -eq "$n" ] || { echo "pgbench_run: $1: $n transactions but $((rows1 - rows0)) rows" >&2; return 1; }
	echo "$n $tps $(q "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')::bigint") $((mx1 - mx0))"
}
