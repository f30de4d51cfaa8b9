#!/usr/bin/env bash
# How close the SQL edition's fence comes to the least any PL/pgSQL fence
# costs, in throughput (issues 36, 52): one-row INSERT transactions into
# six tables of one server, pgbench in turn (the order rotated each round),
# each against the plain `BEGIN; INSERT; COMMIT` into an unfenced table:
#   set          SET LOCAL pg_lease.epoch, then the INSERT (no trigger)
#   empty        a trigger that only returns (bench/sql_edition/sql_edition_floor.sql)
#   least        the cheapest correct fence: lock, then the row, checked
#   least_definer  the same, SECURITY DEFINER (as the edition's must be)
#   edition      the SQL edition's fence, the token in pg_lease.epoch
#   edition_row  the SQL edition's fence, the token in the row
# Prints each round's transactions per second, then the ratio of each
# median to the plain one's. Every row of the edition's table must carry
# the lease's epoch.
#
#   bench/sql_edition/sql_edition_floor_ratios.sh [SECONDS] [ROUNDS] [CLIENTS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../pgbench/pgbench_common.sh" "${1:-4}" "${2:-5}" "${3:-16}"
c=${clients[0]}
trap pg_cluster_stop_all EXIT
pgbench_cluster_init floor
pg_cluster_start floor >/dev/null
source "$here/../../scripts/lib/sql_edition.sh"
sql_edition_psql_script "$work/pg_lease_sql.sql"
psql -X -q -v ON_ERROR_STOP=1 -f "$work/pg_lease_sql.sql" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -f "$here/sql_edition_floor.sql" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT lease_acquire('f', 'writer', '1 day');
CREATE TABLE unfenced (LIKE empty INCLUDING ALL);
CREATE TABLE edition (LIKE empty INCLUDING ALL);
SELECT lease_fence('edition', 'f');
SQL
e=$(psql -X -A -t -c "SELECT epoch FROM leases WHERE name = 'f'")
script() { printf 'BEGIN%s;\nINSERT INTO %s;\nCOMMIT;\n' "$1" "$2" >"$work/$3.sql"; }
set_local=" \\; SET LOCAL pg_lease.epoch = $e"
script "" "unfenced (payload) VALUES ('x')" plain
script "$set_local" "unfenced (payload) VALUES ('x')" set
script "$set_local" "empty (payload) VALUES ('x')" empty
script "$set_local" "least (payload) VALUES ('x')" least
script "$set_local" "least_definer (payload) VALUES ('x')" least_definer
script "$set_local" "edition (payload) VALUES ('x')" edition
script "" "edition (payload, epoch) VALUES ('x', $e)" edition_row

kinds=(plain set empty least least_definer edition edition_row)
declare -A tps
echo "sql_edition_floor_ratios: $(nproc) cores, $c clients; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
	line="round $r:"
	for i in "${!kinds[@]}"; do
		k=${kinds[$(((i + r) % ${#kinds[@]}))]}
		"$pgbench" -n -c "$c" -j "$c" -T "$secs" -f "$work/$k.sql" >"$work/run.out" 2>&1 ||
			{ cat "$work/run.out" >&2; exit 1; }
		! grep -q '^number of failed transactions: [1-9]' "$work/run.out" || { cat "$work/run.out" >&2; exit 1; }
		t=$(awk '/^tps/ { print int($3) }' "$work/run.out")
		tps[$k]="${tps[$k]:-} $t"
		line="$line $k=$t"
	done
	echo "$line"
done
psql -X -A -t -c "SELECT count(*) FILTER (WHERE epoch IS DISTINCT FROM $e) || '/' || count(*) FROM edition" |
	grep -qE '^0/[1-9]' || { echo "sql_edition_floor_ratios: no row, or rows without the lease's epoch" >&2; exit 1; }
echo "sql_edition_floor_ratios: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
plain=$(median <<<"${tps[plain]}")
echo "| what the INSERT fires | median /s | ratio to plain |"
echo "|---|---:|---:|"
for k in "${kinds[@]}"; do
	echo "| $k | $(median <<<"${tps[$k]}") | $(ratio "$(median <<<"${tps[$k]}")" "$plain")x |"
done
