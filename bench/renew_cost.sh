#!/usr/bin/env bash
# What lease_renew costs against the bare compare-and-swap it stands for:
# pgbench -M prepared, each client renewing its own lease, against the same
# renewal as one UPDATE on a table of the leases' shape (LIKE leases
# INCLUDING ALL: columns, CHECKs, indexes, fillfactor), at 1, 4 and 16
# clients, on one server with fsync on.  Each figure is the median of
# per-round ratios; the two sides alternate order from round to round.
#
#   bench/renew_cost.sh [SECONDS_PER_RUN] [ROUNDS] [CLIENTS...]
#   PG_BIN=/path/to/bin bench/renew_cost.sh   # another PostgreSQL install
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../tests/harness/pg_cluster.sh"
secs=${1:-5}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
clients=("$@")
[ ${#clients[@]} -gt 0 ] || clients=(1 4 16)
work=$PG_CLUSTER_ROOT
pgbench=$PG_BIN/pgbench

pg_cluster_init renew
pg_as_owner tee -a "$(pg_cluster_dir renew)/data/postgresql.conf" >/dev/null <<CONF
fsync = on
synchronous_commit = on
max_connections = 100
CONF
pg_cluster_start renew

# One lease per client, granted in order on a fresh sequence, so client i
# holds 'bench-i' at epoch (timeline 1) 2^47 + i + 1; the bare rows match.
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION pg_lease;
SELECT lease_acquire('bench-' || i, 'h', '1 day') FROM generate_series(0, 63) i ORDER BY i;
CREATE TABLE bare_leases (LIKE leases INCLUDING ALL) WITH (fillfactor = 50);
INSERT INTO bare_leases SELECT * FROM leases;
SQL
[ "$(psql -X -A -t -c "SELECT count(*) FROM leases WHERE epoch = 140737488355329 + substr(name, 7)::int")" = 64 ] ||
	{ echo "renew_cost: unexpected epochs" >&2; exit 1; }
cat >"$work/lease.sql" <<'SQL'
\set e 140737488355329 + :client_id
SELECT lease_renew('bench-' || :client_id, 'h', :e);
SQL
cat >"$work/bare.sql" <<'SQL'
\set e 140737488355329 + :client_id
UPDATE bare_leases SET renewed_at = clock_timestamp(), expires_at = clock_timestamp() + ttl WHERE name = 'bench-' || :client_id AND holder = 'h' AND epoch = :e AND expires_at > clock_timestamp() RETURNING expires_at;
SQL

# run SCRIPT CLIENTS: transactions per second
run()
{
	"$pgbench" -n -M prepared -c "$2" -j "$2" -T "$secs" -f "$work/$1.sql" >"$work/run.out" 2>&1 ||
		{ cat "$work/run.out" >&2; return 1; }
	awk '/^tps/ { print int($3) }' "$work/run.out"
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

declare -A r tl tb
for c in "${clients[@]}"; do
	for i in $(seq 1 "$rounds"); do
		start=$(psql -X -A -t -c "SELECT clock_timestamp()")
		if [ $((i % 2)) -eq 1 ]; then
			l=$(run lease "$c")
			b=$(run bare "$c")
		else
			b=$(run bare "$c")
			l=$(run lease "$c")
		fi
		# every client's renewals succeeded (a lost lease would return null fast)
		renewed=$(psql -X -A -t -c "SELECT count(*) FROM leases WHERE name IN (SELECT 'bench-' || i FROM generate_series(0, $c - 1) i) AND renewed_at > '$start'")
		[ "$renewed" -eq "$c" ] || { echo "renew_cost: only $renewed of $c leases renewed" >&2; exit 1; }
		r[$c]="${r[$c]:-} $(ratio "$l" "$b")"
		tl[$c]="${tl[$c]:-} $l"
		tb[$c]="${tb[$c]:-} $b"
		echo "$c clients, round $i: lease_renew $l/s, bare UPDATE $b/s, ratio $(ratio "$l" "$b")"
	done
done

echo
echo "| clients | lease_renew/s | bare UPDATE/s | ratio |"
echo "|---:|---:|---:|---:|"
for c in "${clients[@]}"; do
	echo "| $c | $(median <<<"${tl[$c]}") | $(median <<<"${tb[$c]}") | $(median <<<"${r[$c]}")x |"
done
echo "(medians over $rounds rounds of ${secs}s, fsync on; ratio: median of per-round ratios)"
