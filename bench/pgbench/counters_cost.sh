#!/usr/bin/env bash
# What lease_counters cost the fence: fenced and unfenced one-row INSERTs
# with pgbench (fsync on), on one server started without and then with
# shared_preload_libraries = 'pg_lease', as the median of per-round ratios.
#
#   bench/pgbench/counters_cost.sh [SECONDS_PER_RUN] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/pgbench_common.sh" "${1:-5}" "${2:-3}" 4 # secs, rounds, clients, work
pgbench_cluster_init cost

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
	pgbench_cluster_restart cost $mode
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
for mode in plain preloaded; do
	echo "$mode: median fenced/unfenced ratio $(median <<<"${ratios[$mode]}") over $rounds rounds of ${secs}s, $clients clients"
done
