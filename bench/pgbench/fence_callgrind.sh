#!/usr/bin/env bash
# The server's CPU cost of the fence, in instructions (valgrind's callgrind:
# the same count whatever else the machine does, unlike a throughput
# ratio on a shared 2-core VM).  A single-user backend (postgres --single,
# fsync off) runs N one-row INSERT transactions, `BEGIN; SET LOCAL
# pg_lease.epoch = E; INSERT ...; COMMIT`, into a fenced table and into
# an unfenced one (the same SET LOCAL, the same row with the epoch written
# by hand); each figure is (count at 1,100 - count at 100) / 1,000, so
# start-up and the first transaction's catalog lookups cancel out.  Both
# without preloading and with pg_lease in shared_preload_libraries, where
# a session keeps its lease row across transactions (fence_cache.c).
#
#   bench/pgbench/fence_callgrind.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../tests/harness/pg_cluster.sh"
pg_cluster_start cg >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -f "$here/fence_tables.sql" >/dev/null
epoch=$(psql -X -A -t -c "SELECT epoch FROM leases WHERE name = 'f'")
pg_cluster_stop cg
data=$(pg_cluster_dir cg)/data
work=$PG_CLUSTER_ROOT

# statements TABLE N: N transactions, one per line (--single runs a line each)
statements()
{
	local i row="('x')"
	[ "$1" = unfenced ] && row="('x', $epoch)"
	for i in $(seq "$2"); do
		if [ "$1" = unfenced ]; then
			echo "BEGIN; SET LOCAL pg_lease.epoch = '$epoch'; INSERT INTO unfenced (payload, epoch) VALUES $row; COMMIT;"
		else
			echo "BEGIN; SET LOCAL pg_lease.epoch = '$epoch'; INSERT INTO fenced (payload) VALUES $row; COMMIT;"
		fi
	done
}

# instructions TABLE N PRELOAD: the backend's total instruction count for N
# transactions; PRELOAD is the shared_preload_libraries value
instructions()
{
	local out=$work/cg.$1.$2.${3:-none}
	statements "$1" "$2" >"$out.sql"
	chmod a+r "$out.sql"
	pg_as_owner valgrind --tool=callgrind --callgrind-out-file="$out.cg" \
		"$PG_BIN/postgres" --single -D "$data" -c fsync=off -c shared_preload_libraries="$3" \
		postgres <"$out.sql" >"$out.log" 2>&1
	grep -q ERROR "$out.log" && { cat "$out.log" >&2; return 1; }
	awk '/^summary:/ { print $2 }' "$out.cg"
}

chmod 0777 "$work"
echo "| transaction | pg_lease preloaded | instructions per transaction | fenced / unfenced |"
echo "|---|---|---:|---:|"
for preload in "" pg_lease; do
	for t in unfenced fenced; do
		a=$(instructions "$t" 100 "$preload")
		b=$(instructions "$t" 1100 "$preload")
		per=$(((b - a) / 1000))
		declare "per_$t=$per"
		ratio=""
		[ "$t" = fenced ] && ratio=$(awk -v a="$per_fenced" -v b="$per_unfenced" 'BEGIN { printf "%.3fx", a / b }')
		echo "| $t | $([ -n "$preload" ] && echo yes || echo no) | $per | $ratio |"
	done
done
echo "(valgrind --tool=callgrind, postgres --single, fsync off; (1,100 - 100 transactions) / 1,000)"
