#!/usr/bin/env bash
# Where the history row's cost lies: the cycle's floor (each UPDATE of a
# lease row and its history row in one statement, bench/pgbench/notify_cost.sh) on
# copies of lease_events that differ only in their indexes, against the two
# bare UPDATEs, and the lease_acquire + lease_release cycle itself, at 1, 4
# and 16 clients, each client cycling over 100 leases of its own, on one
# server (fsync on, pg_lease preloaded).  A history row is appended to the
# heap's last page and to two indexes: the identity primary key (always its
# rightmost leaf: every client inserts into one page) and (name, time)
# (spread over the leases).  Variants:
#   all      LIKE lease_events INCLUDING ALL (as the extension has it)
#   no_pk    without the identity primary key (only (name, time))
#   hash_pk  the identity key in a hash index instead of the btree (inserts spread over buckets)
#   no_nt    without the (name, time) index (only the primary key)
#   none     no index at all (the heap only)
#
# With HISTORY_WAITS=N it then samples, every 10 ms for N seconds at the
# largest client count, what the backends wait on (pg_stat_activity
# wait_event_type:wait_event) while the lease cycle, the floor and the bare
# UPDATEs run: page contention shows as LWLock:BufferContent, the commit's
# flush as LWLock:WALWrite / IO:WALSync.
#
# With HISTORY_WAL=N it measures, for each script, the WAL bytes per cycle
# over N cycles of one client (pg_current_wal_insert_lsn before and after):
# a count, not a timing, so it holds on a busy machine.
#
#   bench/pgbench/history_cost.sh [SECONDS_PER_RUN] [ROUNDS] [CLIENTS...]
#   HISTORY_WAITS=10 bench/pgbench/history_cost.sh 3 3 16
#   HISTORY_WAL=2000 bench/pgbench/history_cost.sh 1 1 1
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/pgbench_common.sh" "$@"
pgbench_cluster_init history
echo "shared_preload_libraries = 'pg_lease'" | pg_as_owner tee -a "$(pg_cluster_dir history)/data/postgresql.conf" >/dev/null
pg_cluster_start history
per_client=100
variants=(all no_pk hash_pk no_nt none)

psql -X -q -v ON_ERROR_STOP=1 -v per_client=$per_client >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION pg_lease;
CREATE TABLE bare_leases (LIKE leases INCLUDING ALL) WITH (fillfactor = 50);
CREATE SEQUENCE bare_seq AS bigint MINVALUE 1;
INSERT INTO bare_leases (name, holder, epoch, acquired_at, renewed_at, expires_at, ttl, transitions, owner_role)
SELECT 'bench-' || i || '-' || k, NULL, 1, now(), now(), now(), '60 s', 0, current_user
FROM generate_series(0, 63) i, generate_series(0, :per_client - 1) k;
SELECT count(lease_release(name, 'h0', epoch))
FROM (SELECT name, (lease_acquire(name, 'h0', '60 s')).epoch FROM bare_leases ORDER BY name) l;
CREATE TABLE ev_all (LIKE lease_events INCLUDING ALL);
CREATE TABLE ev_no_pk (LIKE lease_events INCLUDING ALL);
ALTER TABLE ev_no_pk DROP CONSTRAINT ev_no_pk_pkey;
CREATE TABLE ev_hash_pk (LIKE lease_events INCLUDING ALL);
ALTER TABLE ev_hash_pk DROP CONSTRAINT ev_hash_pk_pkey;
CREATE INDEX ON ev_hash_pk USING hash (id);
CREATE TABLE ev_no_nt (LIKE lease_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY);
ALTER TABLE ev_no_nt ADD PRIMARY KEY (id);
CREATE TABLE ev_none (LIKE lease_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY);
VACUUM ANALYZE;
SQL

pick="\\set k random(0, $((per_client - 1)))"
name="'bench-' || :client_id || '-' || :k"
acquire="UPDATE bare_leases SET holder = 'h' || :client_id, epoch = nextval('bare_seq'), acquired_at = clock_timestamp(), renewed_at = clock_timestamp(), expires_at = clock_timestamp() + interval '60 s', ttl = interval '60 s', transitions = transitions + 1, owner_role = current_user WHERE name = $name AND (holder IS NULL OR holder = 'h' || :client_id)"
release="UPDATE bare_leases SET holder = NULL, expires_at = LEAST(expires_at, clock_timestamp()) WHERE name = $name AND holder = 'h' || :client_id"
cat >"$work/lease.sql" <<SQL
$pick
SELECT epoch FROM lease_acquire($name, 'h' || :client_id, '60 s') WHERE acquired \\gset
SELECT 1 / lease_release($name, 'h' || :client_id, :epoch)::int AS released \\gset
SQL
printf '%s\n%s RETURNING epoch \\gset\n%s RETURNING true AS released \\gset\n' "$pick" "$acquire" "$release" >"$work/plain.sql"
for v in "${variants[@]}"; do
	cat >"$work/floor_$v.sql" <<SQL
$pick
WITH u AS ($acquire RETURNING name, holder, epoch, expires_at) INSERT INTO ev_$v (event, name, holder, epoch, expires_at, role) SELECT 'acquired', name, holder, epoch, expires_at, current_user FROM u RETURNING epoch \\gset
WITH u AS ($release RETURNING name, epoch, expires_at) INSERT INTO ev_$v (event, name, holder, epoch, expires_at, role) SELECT 'released', name, 'h' || :client_id, epoch, expires_at, current_user FROM u RETURNING true AS released \\gset
SQL
done

run()
{
	"$pgbench" -n -M prepared -c "$2" -j "$2" -T "$secs" -f "$work/$1.sql" >"$work/run.out" 2>&1 ||
		{ cat "$work/run.out" >&2; return 1; }
	awk '/^tps/ { print int($3) }' "$work/run.out"
}

scripts=(plain lease "${variants[@]/#/floor_}")
declare -A ratio tps
for c in "${clients[@]}"; do
	for r in $(seq 1 "$rounds"); do
		# rotate the order from round to round; each ratio against the plain
		# UPDATEs measured in the same round
		n=${#scripts[@]}
		order=("${scripts[@]:$((r % n))}" "${scripts[@]:0:$((r % n))}")
		declare -A got=()
		for s in "${order[@]}"; do
			got[$s]=$(run "$s" "$c")
		done
		line="$c clients, round $r: plain ${got[plain]}/s"
		for s in "${scripts[@]}"; do
			[ "$s" = plain ] && continue
			ratio[$s.$c]="${ratio[$s.$c]:-} $(ratio "${got[$s]}" "${got[plain]}")"
			tps[$s.$c]="${tps[$s.$c]:-} ${got[$s]}"
			line="$line, $s ${got[$s]}/s ($(ratio "${got[$s]}" "${got[plain]}"))"
		done
		echo "$line"
		unset got
	done
done

echo
printf '| clients | lease cycle |'
for v in "${variants[@]}"; do printf ' floor, %s |' "$v"; done
echo
printf '|---:|---:|'
for _ in "${variants[@]}"; do printf -- '---:|'; done
echo
for c in "${clients[@]}"; do
	printf '| %s | %sx |' "$c" "$(median <<<"${ratio[lease.$c]}")"
	for v in "${variants[@]}"; do printf ' %sx (%s/s) |' "$(median <<<"${ratio[floor_$v.$c]}")" "$(median <<<"${tps[floor_$v.$c]}")"; done
	echo
done
echo "(medians over $rounds rounds of ${secs}s of the per-round ratio to two bare UPDATEs; 100 leases per client; fsync on; preloaded)"

if [ -n "${HISTORY_WAITS:-}" ]; then
	c=${clients[-1]}
	echo
	echo "What $c clients wait on (samples of pg_stat_activity every 10 ms for ${HISTORY_WAITS} s; CPU = running, no wait event):"
	for s in plain lease floor_all floor_no_pk floor_hash_pk; do
		"$pgbench" -n -M prepared -c "$c" -j "$c" -T "$((HISTORY_WAITS + 2))" -f "$work/$s.sql" >"$work/waits.out" 2>&1 &
		bench=$!
		sleep 1
		PGOPTIONS="-c my.n=$((HISTORY_WAITS * 100))" psql -X -A -t -q <<'SQL' | sed "s/^/  $s: /"
CREATE TEMP TABLE w (ev text);
DO $$
BEGIN
	FOR i IN 1 .. current_setting('my.n')::int LOOP
		PERFORM pg_stat_clear_snapshot();
		INSERT INTO w SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU')
		FROM pg_stat_activity WHERE application_name = 'pgbench' AND state = 'active';
		PERFORM pg_sleep(0.01);
	END LOOP;
END
$$;
SELECT ev || ' ' || round(100.0 * count(*) / sum(count(*)) OVER (), 1) || '%' FROM w GROUP BY ev ORDER BY count(*) DESC LIMIT 8;
SQL
		wait "$bench"
	done
fi

if [ -n "${HISTORY_WAL:-}" ]; then
	echo
	echo "WAL bytes per cycle (${HISTORY_WAL} cycles, 1 client; a cycle is two commits):"
	for s in plain lease "${variants[@]/#/floor_}"; do
		psql -X -q -c CHECKPOINT
		before=$(psql -X -A -t -c "SELECT pg_current_wal_insert_lsn()")
		"$pgbench" -n -M prepared -c 1 -j 1 -t "$HISTORY_WAL" -f "$work/$s.sql" >"$work/wal.out" 2>&1 ||
			{ cat "$work/wal.out" >&2; exit 1; }
		psql -X -A -t -c "SELECT '  $s: ' || round(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$before') / $HISTORY_WAL) || ' bytes'"
	done
fi
