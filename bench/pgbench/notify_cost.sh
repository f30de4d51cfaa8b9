#!/usr/bin/env bash
# What NOTIFY costs a lease change: a lease_acquire + lease_release cycle
# (two transactions) against the same two UPDATEs on a plain table of the
# leases' shape, each client cycling over LEASES_PER_CLIENT (default 100)
# leases of its own on both sides, a random one per cycle (the work the
# figure stands for: a process holding many leases; one row updated
# thousands of times a second is a slow baseline), every UPDATE checked to
# have found its row (\gset fails the run on none), at 1, 4 and 16
# clients, with a follower LISTENing on
# pg_lease, on one server (fsync on) started without and then with
# shared_preload_libraries = 'pg_lease' (NOTIFY from the committing
# transaction, then from the notifier worker).  Each figure is the median
# of per-round ratios; the two sides alternate order from round to round.
# Rows that explain the gap: the plain UPDATEs plus the history INSERT a
# lease change writes, and plus pg_notify in the same transaction.  The
# cycle's floor, in the preloaded half, side by side with the lease cycle
# and the plain UPDATEs in the same rounds: each UPDATE and its history
# INSERT in one statement (WITH u AS (UPDATE ... RETURNING ...) INSERT INTO
# bare_events ... SELECT ... FROM u), one round trip and one commit each, as
# a lease change writes its row and its history.  The follower's count of
# notifications is checked against lease_events.
#
# With PGLEASE_BENCH=path/to/pglease_bench, each mode also times graceful
# handovers to a waiting C++ elector (woken by NOTIFY).
#
#   bench/pgbench/notify_cost.sh [SECONDS_PER_RUN] [ROUNDS] [CLIENTS...]
#   PG_BIN=/path/to/bin bench/pgbench/notify_cost.sh   # another PostgreSQL install
#   LEASES_PER_CLIENT=1 bench/pgbench/notify_cost.sh   # the former baseline: one row per client
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/pgbench_common.sh" "$@"
source "$here/follower.sh"
pgbench_cluster_init cost

per_client=${LEASES_PER_CLIENT:-100}

# A plain table with the leases' columns, CHECKs and fillfactor, per_client
# rows and names per client, as lease names are per client below; the
# leases exist (granted once and released) so that neither side inserts.
setup()
{
	psql -X -q -v ON_ERROR_STOP=1 -v per_client="$per_client" >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_lease;
DROP TABLE IF EXISTS bare_leases, bare_events;
DROP SEQUENCE IF EXISTS bare_seq;
-- derived from the extension's table, never a copy: LIKE takes its columns,
-- defaults, constraints and indexes, the ALTER its fillfactor
CREATE TABLE bare_leases (LIKE leases INCLUDING ALL);
SELECT format('ALTER TABLE bare_leases SET (%s)', array_to_string(reloptions, ', '))
FROM pg_class WHERE oid = 'leases'::regclass AND reloptions IS NOT NULL \gexec
CREATE SEQUENCE bare_seq AS bigint MINVALUE 1;
CREATE TABLE bare_events (LIKE lease_events INCLUDING ALL);
INSERT INTO bare_leases
SELECT 'bench-' || i || '-' || k, NULL, 1, now(), now(), now(), '60 s', 0, current_user
FROM generate_series(0, 63) i, generate_series(0, :per_client - 1) k;
SELECT lease_release(name, 'h0', epoch)
FROM (SELECT name, (lease_acquire(name, 'h0', '60 s')).epoch FROM bare_leases ORDER BY name) l;
TRUNCATE lease_events;
VACUUM ANALYZE bare_leases, leases;
SQL
	# each cycle a random lease of the client's own; the lease side checks
	# that it was granted and released (division by zero fails the run)
	local pick="\\set k random(0, $((per_client - 1)))"
	cat >"$work/lease.sql" <<SQL
$pick
SELECT epoch FROM lease_acquire('bench-' || :client_id || '-' || :k, 'h' || :client_id, '60 s') WHERE acquired \\gset
SELECT 1 / lease_release('bench-' || :client_id || '-' || :k, 'h' || :client_id, :epoch)::int AS released \\gset
SQL
	# the same holder may take its own lease again (a run cut by -T between
	# the two statements leaves it held), as lease_acquire lets it
	local name="'bench-' || :client_id || '-' || :k"
	local acquire="UPDATE bare_leases SET holder = 'h' || :client_id, epoch = nextval('bare_seq'), acquired_at = clock_timestamp(), renewed_at = clock_timestamp(), expires_at = clock_timestamp() + interval '60 s', ttl = interval '60 s', transitions = transitions + 1, owner_role = current_user WHERE name = $name AND (holder IS NULL OR holder = 'h' || :client_id) RETURNING epoch"
	local release="UPDATE bare_leases SET holder = NULL, expires_at = LEAST(expires_at, clock_timestamp()) WHERE name = $name AND holder = 'h' || :client_id RETURNING true AS released"
	printf '%s\n%s \\gset\n%s \\gset\n' "$pick" "$acquire" "$release" >"$work/plain.sql"
	local event="INSERT INTO bare_events (event, name, holder, epoch, expires_at, role) VALUES"
	cat >"$work/plain_events.sql" <<SQL
$pick
BEGIN;
$acquire \\gset
$event ('acquired', $name, 'h' || :client_id, :epoch, clock_timestamp(), current_user);
COMMIT;
BEGIN;
$release \\gset
$event ('released', $name, 'h' || :client_id, :epoch, clock_timestamp(), current_user);
COMMIT;
SQL
	# the floor: each UPDATE and its history row in one statement
	local history="${event% VALUES}"
	cat >"$work/plain_one.sql" <<SQL
$pick
WITH u AS (${acquire% RETURNING epoch} RETURNING name, holder, epoch, expires_at) $history SELECT 'acquired', name, holder, epoch, expires_at, current_user FROM u RETURNING epoch \\gset
WITH u AS (${release% RETURNING true AS released} RETURNING name, epoch, expires_at) $history SELECT 'released', name, 'h' || :client_id, epoch, expires_at, current_user FROM u RETURNING true AS released \\gset
SQL
	cat >"$work/plain_notify.sql" <<SQL
$pick
BEGIN;
$acquire \\gset
SELECT pg_notify('pg_lease', 'acquired ' || $name || ' ' || :epoch);
COMMIT;
BEGIN;
$release \\gset
SELECT pg_notify('pg_lease', 'released ' || $name || ' ' || :epoch);
COMMIT;
SQL
}

# run SCRIPT CLIENTS: tps (script executions per second, each two commits)
run()
{
	"$pgbench" -n -M prepared -c "$2" -j "$2" -T "$secs" -f "$work/$1.sql" >"$work/run.out" 2>&1 ||
		{ cat "$work/run.out" >&2; return 1; }
	awk '/^number of transactions actually processed/ { split($NF, a, "/"); n = a[1] } /^tps/ { t = $3 } END { print int(t), n }' "$work/run.out"
}

declare -A r_lease r_events r_notify r_one r_lf tps_lease tps_plain tps_one handover
missing=0
for mode in plain preloaded; do
	pgbench_cluster_restart cost $mode
	setup
	follower_start $mode
	cycles=0
	for c in "${clients[@]}"; do
		for r in $(seq 1 "$rounds"); do
			# preloaded: the floor too, the plain UPDATEs between it and the lease cycle
			o=
			if [ $((r % 2)) -eq 1 ]; then
				read -r l ln < <(run lease "$c")
				read -r p _ < <(run plain "$c")
				[ $mode = preloaded ] && read -r o _ < <(run plain_one "$c")
			else
				[ $mode = preloaded ] && read -r o _ < <(run plain_one "$c")
				read -r p _ < <(run plain "$c")
				read -r l ln < <(run lease "$c")
			fi
			cycles=$((cycles + ln))
			r_lease[$mode.$c]="${r_lease[$mode.$c]:-} $(ratio "$l" "$p")"
			tps_lease[$mode.$c]="${tps_lease[$mode.$c]:-} $l"
			tps_plain[$mode.$c]="${tps_plain[$mode.$c]:-} $p"
			echo "$mode, $c clients, round $r: lease cycle $l/s, two plain UPDATEs $p/s, ratio $(ratio "$l" "$p")"
			if [ -n "$o" ]; then
				r_one[$c]="${r_one[$c]:-} $(ratio "$o" "$p")"
				r_lf[$c]="${r_lf[$c]:-} $(ratio "$l" "$o")"
				tps_one[$c]="${tps_one[$c]:-} $o"
				echo "  UPDATE + history INSERT in one statement (the floor) $o/s, ratio $(ratio "$o" "$p"); lease cycle / floor $(ratio "$l" "$o")"
			fi
			if [ $mode = plain ]; then
				read -r e _ < <(run plain_events "$c")
				read -r n _ < <(run plain_notify "$c")
				read -r p2 _ < <(run plain "$c")
				r_events[$c]="${r_events[$c]:-} $(ratio "$e" "$p2")"
				r_notify[$c]="${r_notify[$c]:-} $(ratio "$n" "$p2")"
				echo "  plain UPDATEs + history INSERT $e/s, + pg_notify $n/s, plain $p2/s"
			fi
		done
	done
	# a run cut off by -T between acquire and release leaves the lease held,
	# so the next acquire extends it without an event: count the history
	events=$(psql -X -A -t -c "SELECT count(*) FROM lease_events")
	got=$(follower_stop $mode "$events")
	echo "$mode: the follower received $got lease notifications; lease_events has $events ($cycles cycles)"
	[ "$got" -eq "$events" ] || { echo "$mode: NOTIFICATIONS MISSING OR EXTRA" >&2; missing=1; }
	psql -X -q -c "TRUNCATE lease_events" >/dev/null
	if [ -n "${PGLEASE_BENCH:-}" ]; then
		"$PGLEASE_BENCH" --only handover --handover-runs "${HANDOVER_RUNS:-30}" >"$work/handover.out" 2>&1 ||
			{ cat "$work/handover.out" >&2; false; }
		handover[$mode]=$(grep -o 'handover p[0-9]*: [0-9.]* ms' "$work/handover.out" | sed 's/handover //' | paste -sd ' ')
		echo "$mode: graceful handover ${handover[$mode]}"
	fi
done

echo
echo "| clients | cycle/s, NOTIFY at commit | cycle/s, notifier worker | 2 plain UPDATEs/s | ratio, NOTIFY at commit | ratio, notifier worker | plain + history INSERT | plain + pg_notify | UPDATE + history INSERT in one statement (floor, preloaded) | notifier worker cycle / floor |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for c in "${clients[@]}"; do
	echo "| $c | $(median <<<"${tps_lease[plain.$c]}") | $(median <<<"${tps_lease[preloaded.$c]}") | $(median <<<"${tps_plain[preloaded.$c]}") |" \
		"$(median <<<"${r_lease[plain.$c]}")x | $(median <<<"${r_lease[preloaded.$c]}")x |" \
		"$(median <<<"${r_events[$c]}")x | $(median <<<"${r_notify[$c]}")x |" \
		"$(median <<<"${r_one[$c]}")x ($(median <<<"${tps_one[$c]}")/s) | $(median <<<"${r_lf[$c]}")x |"
done
echo "(medians over $rounds rounds of ${secs}s; a cycle is lease_acquire + lease_release, two commits, of a random one of the client's $per_client leases; ratios against two plain UPDATEs of a random one of the client's $per_client rows, and the worker's cycle against the floor)"
if [ -n "${PGLEASE_BENCH:-}" ]; then
	echo "graceful handover, NOTIFY at commit: ${handover[plain]}; notifier worker: ${handover[preloaded]}"
fi
exit "$missing"
