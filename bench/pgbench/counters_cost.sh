#!/usr/bin/env bash
# What lease_counters cost the fence: fenced and unfenced one-row INSERTs
# with pgbench (fsync on), on one server started without and then with
# shared_preload_libraries = 'pg_lease', as the median of per-round ratios.
#
#   bench/pgbench/counters_cost.sh [SECONDS_PER_RUN] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../tests/harness/pg_cluster.sh"
secs=${1:-5}
rounds=${2:-3}
clients=4
work=$PG_CLUSTER_ROOT

pg_cluster_init cost
pg_as_owner tee -a "$(pg_cluster_dir cost)/data/postgresql.conf" >/dev/null <<CONF
fsync = on
synchronous_commit = on
CONF

setup()
{
	psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION IF NOT EXISTS pg_lease;
DROP TABLE IF EXISTS fenced, plain;
CREATE TABLE fenced (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, epoch bigint);
CREATE TABLE plain (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, epoch bigint);
SELECT lease_fence('fenced', 'bench');
SELECT lease_revoke('bench');
SQL
	epoch=$(psql -X -A -t -c "SELECT epoch FROM lease_acquire('bench', 'bench', '1h')")
	echo "INSERT INTO fenced (payload) VALUES ('x');" >"$work/fenced.sql"
	echo "INSERT INTO plain (payload, epoch) VALUES ('x', 0);" >"$work/plain.sql"
}
tps()
{
	PGOPTIONS=${2:-} pgbench -n -M prepared -c $clients -j $clients -T "$secs" -f "$work/$1.sql" 2>/dev/null |
		awk '/^tps/ {print int($3)}'
}

declare -A ratios
for mode in plain preloaded; do
	pg_cluster_stop cost
	if [ $mode = preloaded ]; then
		pg_cluster_start cost -c shared_preload_libraries=pg_lease
	else
		pg_cluster_start cost
	fi
	setup
	for r in $(seq 1 "$rounds"); do
		f=$(tps fenced "-c pg_lease.epoch=$epoch")
		p=$(tps plain)
		ratio=$(awk -v f="$f" -v p="$p" 'BEGIN { printf "%.3f", f / p }')
		echo "$mode round $r: fenced $f tps, unfenced $p tps, ratio $ratio"
		ratios[$mode]="${ratios[$mode]:-} $ratio"
	done
done
# the median of the rounds' ratios: a round disturbed by other load moves it least
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for mode in plain preloaded; do
	echo "$mode: median fenced/unfenced ratio $(median <<<"${ratios[$mode]}") over $rounds rounds of ${secs}s, $clients clients"
done
