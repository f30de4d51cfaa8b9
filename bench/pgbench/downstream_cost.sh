#!/usr/bin/env bash
# What a downstream fence (1.4) costs: a one-row INSERT transaction on a
# table fenced by the floor of another database's lease (BEGIN and
# SET LOCAL pg_lease.epoch in one query, the INSERT, COMMIT: three round
# trips, as run_fenced sends them) against the same transaction on an
# unfenced twin (the same SET LOCAL, the same row values), on one server
# (fsync on, not preloaded: a downstream database need not preload).
# Rounds alternate which side runs first; the figure is the median of the
# per-round ratios.  Every run is checked to have written one row per
# transaction; WAL bytes and MultiXacts per transaction are counted beside.
#
#   bench/pgbench/downstream_cost.sh [SECONDS_PER_RUN] [ROUNDS] [CLIENTS...]   (5 s, 5, 16)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/pgbench_common.sh" "${1:-5}" "${2:-5}" "${@:3}"
[ $# -gt 2 ] || clients=(16)
pgbench_cluster_init downstream
pg_cluster_start downstream

epoch=4242
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION pg_lease;
CREATE TABLE fenced (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, epoch bigint);
CREATE TABLE unfenced (LIKE fenced INCLUDING ALL);
SELECT lease_fence('fenced', 'f', store => '7000000000000000000/store');
SELECT lease_raise('7000000000000000000/store', 'f', $epoch);
SQL
pgbench_fenced_pair "$epoch"

# run TABLE CLIENTS: "tps wal_bytes_per_tx multixacts", every row carrying the token
run()
{
	local n tps bytes mx
	read -r n tps bytes mx <<<"$(pgbench_run "$1" "$2")"
	[ "$(q "SELECT count(*) FROM fenced WHERE epoch <> $epoch")" = 0 ] || { echo "downstream_cost: a row without the token" >&2; return 1; }
	echo "$tps $(awk -v b="$bytes" -v n="$n" 'BEGIN { printf "%.1f", b / n }') $mx"
}

echo "| clients | round | unfenced tps | fenced tps | ratio | WAL B/tx unfenced / fenced | MultiXacts fenced |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for c in "${clients[@]}"; do
	ratios=""
	for r in $(seq "$rounds"); do
		if [ $((r % 2)) = 1 ]; then
			read -r tu wu mu <<<"$(run unfenced "$c")"
			read -r tf wf mf <<<"$(run fenced "$c")"
		else
			read -r tf wf mf <<<"$(run fenced "$c")"
			read -r tu wu mu <<<"$(run unfenced "$c")"
		fi
		x=$(ratio "$tf" "$tu")
		ratios+=" $x"
		echo "| $c | $r | $tu | $tf | ${x}x | $wu / $wf | $mf |"
	done
	echo "| $c | median | | | **$(echo "$ratios" | median)x** | | |"
done
echo "(pgbench, ${secs}s per run, fsync on, not preloaded; every run checked to have written its rows with the token)"
