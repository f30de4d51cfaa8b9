# Shared by the pgbench scripts (bench/notify_cost.sh, bench/pgbench_ratios.sh):
# their arguments, a throwaway server with default durability, and medians.
#
#   source bench/pgbench_common.sh "$@"   # sets secs, rounds, clients, work, pgbench
#   pgbench_cluster_init NAME             # fsync and synchronous_commit on
source "$(dirname "${BASH_SOURCE[0]}")/../tests/harness/pg_cluster.sh"
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

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
