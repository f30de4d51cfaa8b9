#!/usr/bin/env bash
# The two editions side by side, on one server in one run (issue 36): the C
# extension (database `c`, preloaded) and the SQL edition (database `s`,
# installed with psql -f by a database owner who is no superuser, the
# figures run as that owner), each against its own baseline in its own
# database, by pgbench alone:
#   renew     lease_renew of a random one of 100 leases per client vs a bare
#             UPDATE compare-and-swap on a twin table (-M prepared);
#   fenced    BEGIN + SET LOCAL pg_lease.epoch, a one-row INSERT, COMMIT on a
#             fenced table vs the same unfenced (as run_fenced sends it);
#   cycle     lease_acquire + lease_release of a random one of 100 free
#             leases per client vs the two bare UPDATEs on a twin table.
# Every call is checked (a refused renew, acquire or release fails its
# script, and so its run); every fenced row must carry the lease's epoch.
# Each figure is the median of per-round ratios; the two sides alternate
# order from round to round. A follower LISTENs on pg_lease in each database.
#
#   bench/sql_edition/sql_edition_ratios.sh [SECONDS_PER_RUN] [ROUNDS] [CLIENTS...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/../pgbench/pgbench_common.sh" "$@"
pgbench_cluster_init editions
echo "shared_preload_libraries = 'pg_lease'" | pg_as_owner tee -a "$(pg_cluster_dir editions)/data/postgresql.conf" >/dev/null
pg_cluster_start editions
max_clients=$(printf '%s\n' "${clients[@]}" | sort -n | tail -1)

psql -X -q -v ON_ERROR_STOP=1 -c "CREATE ROLE bench_owner LOGIN" -c "GRANT pg_signal_backend TO bench_owner" \
	-c "CREATE DATABASE c" -c "CREATE DATABASE s OWNER bench_owner"
psql -X -q -v ON_ERROR_STOP=1 -d c -c "CREATE EXTENSION pg_lease"
source "$root/scripts/lib/sql_edition.sh"
sql_edition_psql_script "$work/pg_lease_sql.sql"
PGUSER=bench_owner psql -X -q -v ON_ERROR_STOP=1 -d s -f "$work/pg_lease_sql.sql"

# as DB SQL...: psql in database DB as the role that runs its figures
as() {
	local db=$1
	shift
	if [ "$db" = s ]; then PGUSER=bench_owner psql -X -q -A -t -v ON_ERROR_STOP=1 -d s "$@"; else
		psql -X -q -A -t -v ON_ERROR_STOP=1 -d c "$@"; fi
}

# Per database: 100 held leases per client (r-N-K, consecutive epochs),
# their bare twins; 100 free leases per client (c-N-K) and their twins; a
# lease f fencing one table, and an unfenced twin.
for db in c s; do
	as "$db" >/dev/null <<SQL
SET client_min_messages = warning;
DO \$\$
BEGIN
	FOR i IN 1 .. $max_clients LOOP
		FOR k IN 0 .. 99 LOOP
			PERFORM lease_acquire('r-' || i || '-' || k, 'h' || i, '1 day');
		END LOOP;
	END LOOP;
	FOR i IN 1 .. $max_clients LOOP
		FOR k IN 0 .. 99 LOOP
			PERFORM lease_release('c-' || i || '-' || k, 'h' || i,
				(SELECT epoch FROM lease_acquire('c-' || i || '-' || k, 'h' || i, '1 day')));
		END LOOP;
	END LOOP;
END
\$\$;
CREATE TABLE bare (LIKE leases INCLUDING ALL) WITH (fillfactor = 50);
INSERT INTO bare SELECT * FROM leases WHERE name LIKE 'r-%';
CREATE TABLE bare_cycle (LIKE leases INCLUDING ALL) WITH (fillfactor = 50);
INSERT INTO bare_cycle SELECT * FROM leases WHERE name LIKE 'c-%';
CREATE SEQUENCE bare_epochs START 1000000;
SELECT lease_acquire('f', 'writer', '1 day');
CREATE TABLE fenced (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, epoch bigint);
CREATE TABLE unfenced (LIKE fenced INCLUDING ALL);
SELECT lease_fence('fenced', 'f');
SQL
	e0=$(as "$db" -c "SELECT min(epoch) FROM leases WHERE name LIKE 'r-%'")
	[ "$(as "$db" -c "SELECT count(*) FROM leases WHERE name LIKE 'r-%' AND epoch <> $e0 + 100 * (split_part(name, '-', 2)::int - 1) + split_part(name, '-', 3)::int")" = 0 ] ||
		{ echo "sql_edition_ratios: $db: the renewed leases' epochs are not consecutive" >&2; exit 1; }
	cat >"$work/$db.renew.sql" <<SQL
\\set k random(0, 99)
\\set e $e0 + 100 * :client_id + :k
SELECT 1 / (lease_renew('r-' || :client_id + 1 || '-' || :k, 'h' || :client_id + 1, :e) IS NOT NULL)::int AS renewed \\gset
SQL
	cat >"$work/$db.bare.sql" <<SQL
\\set k random(0, 99)
\\set e $e0 + 100 * :client_id + :k
UPDATE bare SET renewed_at = clock_timestamp(), expires_at = clock_timestamp() + ttl WHERE name = 'r-' || :client_id + 1 || '-' || :k AND holder = 'h' || :client_id + 1 AND epoch = :e AND expires_at > clock_timestamp() RETURNING expires_at \\gset
SQL
done
cat >"$work/fenced.sql" <<'SQL'
\if :epoch = 0
SELECT epoch FROM leases WHERE name = 'f' \gset
\endif
BEGIN \; SET LOCAL pg_lease.epoch = :epoch;
INSERT INTO fenced (payload) VALUES ('x');
COMMIT;
SQL
cat >"$work/unfenced.sql" <<'SQL'
BEGIN;
INSERT INTO unfenced (payload) VALUES ('x');
COMMIT;
SQL
cat >"$work/cycle.sql" <<'SQL'
\set k random(0, 99)
SELECT 1 / acquired::int AS ok, epoch FROM lease_acquire('c-' || :client_id + 1 || '-' || :k, 'h' || :client_id + 1, '1 day') \gset
SELECT 1 / lease_release('c-' || :client_id + 1 || '-' || :k, 'h' || :client_id + 1, :epoch)::int AS released \gset
SQL
cat >"$work/bare_cycle.sql" <<'SQL'
\set k random(0, 99)
UPDATE bare_cycle SET holder = 'h' || :client_id + 1, epoch = nextval('bare_epochs'), acquired_at = clock_timestamp(), renewed_at = clock_timestamp(), expires_at = clock_timestamp() + ttl WHERE name = 'c-' || :client_id + 1 || '-' || :k AND holder IS NULL RETURNING epoch \gset
UPDATE bare_cycle SET holder = NULL, expires_at = clock_timestamp() WHERE name = 'c-' || :client_id + 1 || '-' || :k AND epoch = :epoch RETURNING 1 AS released \gset
SQL

# run DB SCRIPT MODE CLIENTS: transactions per second (none may fail)
run()
{
	local user=()
	[ "$1" = s ] && user=(-U bench_owner)
	"$pgbench" "${user[@]}" -n -M "$3" -c "$4" -j "$4" -T "$secs" -D epoch=0 -f "$2" "$1" >"$work/run.out" 2>&1 ||
		{ cat "$work/run.out" >&2; return 1; }
	! grep -q '^number of failed transactions: [1-9]' "$work/run.out" || { cat "$work/run.out" >&2; return 1; }
	awk '/^tps/ { print int($3) }' "$work/run.out"
}

declare -A ratios tps_a tps_b
# pair KEY DB SCRIPT BASELINE MODE CLIENTS: one round, order by round parity
pair()
{
	local a b
	if [ $((r % 2)) -eq 0 ]; then
		a=$(run "$2" "$3" "$5" "$6")
		b=$(run "$2" "$4" "$5" "$6")
	else
		b=$(run "$2" "$4" "$5" "$6")
		a=$(run "$2" "$3" "$5" "$6")
	fi
	ratios[$1.$6]="${ratios[$1.$6]:-} $(ratio "$a" "$b")"
	tps_a[$1.$6]="${tps_a[$1.$6]:-} $a"
	tps_b[$1.$6]="${tps_b[$1.$6]:-} $b"
	echo "$1, $6 clients, round $r: $a/s vs $b/s, ratio $(ratio "$a" "$b")"
}

# A follower LISTENing in each database, for the whole run.
for db in c s; do
	{
		echo "LISTEN pg_lease;"
		while [ ! -e "$work/stop" ]; do
			echo "SELECT 1;"
			sleep 0.2
		done
	} | psql -X -q -A -t -d "$db" >/dev/null 2>&1 &
done
trap 'touch "$work/stop"; wait; pg_cluster_stop_all' EXIT

echo "sql_edition_ratios: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for c in "${clients[@]}"; do
	for r in $(seq 1 "$rounds"); do
		for db in c s; do
			pair "renew.$db" "$db" "$work/$db.renew.sql" "$work/$db.bare.sql" prepared "$c"
			pair "fenced.$db" "$db" "$work/fenced.sql" "$work/unfenced.sql" simple "$c"
			pair "cycle.$db" "$db" "$work/cycle.sql" "$work/bare_cycle.sql" prepared "$c"
		done
	done
done

# takeover DB: seconds from a grant (ttl 2 s) whose holder stalls inside an
# open fenced transaction to another holder's grant, on the server's clock
# (the contender asks every 50 ms; pg_lease.takeover_timeout 1 s, the
# default); the stalled transaction must never commit.
as c -c "CREATE TABLE stall (id int, epoch bigint)" -c "SELECT lease_fence('stall', 'tk')" >/dev/null
as s -c "CREATE TABLE stall (id int, epoch bigint)" -c "SELECT lease_fence('stall', 'tk')" >/dev/null
takeover()
{
	local db=$1 e granted taken="" pid_file=$work/stall.$1.pid
	as "$db" -c "SELECT lease_revoke('tk')" >/dev/null 2>&1 || true
	read -r e granted < <(as "$db" -c "SELECT epoch, extract(epoch FROM clock_timestamp()) FROM lease_acquire('tk', 'stalled', '2s')" | tr '|' ' ')
	as "$db" >/dev/null 2>&1 <<SQL &
BEGIN;
SELECT lease_use('tk', $e);
INSERT INTO stall VALUES (1, NULL);
\\! sleep 6
COMMIT;
SQL
	local stalled=$!
	sleep 0.3
	for _ in $(seq 200); do
		taken=$(as "$db" -c "SELECT epoch FROM lease_acquire('tk', 'taker', '5s') WHERE acquired")
		[ -n "$taken" ] && break
		sleep 0.05
	done
	wait "$stalled" || true
	[ -n "$taken" ] && [ "$(as "$db" -c "SELECT count(*) FROM stall WHERE epoch = $e")" = 0 ] ||
		{ echo "sql_edition_ratios: $db: no takeover, or the stalled write committed" >&2; exit 1; }
	as "$db" -c "SELECT round((extract(epoch FROM time) - $granted)::numeric, 3) FROM lease_events WHERE name = 'tk' AND event = 'takeover' AND epoch = $taken"
}
declare -A took
for r in $(seq 1 "$rounds"); do
	for db in c s; do
		took[$db]="${took[$db]:-} $(takeover "$db")"
	done
done
echo "sql_edition_ratios: load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# The fence was exercised in both: every fenced row carries the lease's epoch.
for db in c s; do
	as "$db" -c "SELECT count(*) FILTER (WHERE f.epoch IS DISTINCT FROM l.epoch) || '/' || count(*) FROM fenced f, leases l WHERE l.name = 'f'" |
		grep -qE '^0/[1-9]' || { echo "sql_edition_ratios: $db: fenced rows without the lease's epoch" >&2; exit 1; }
done

echo
echo "| figure | clients | C edition: /s, baseline /s, ratio | SQL edition: /s, baseline /s, ratio (range) |"
echo "|---|---:|---|---|"
cell() { echo "$(median <<<"${tps_a[$1]}") / $(median <<<"${tps_b[$1]}"), **$(median <<<"${ratios[$1]}")x**"; }
range() { tr ' ' '\n' | grep . | sort -n | sed -n '1p;$p' | paste -sd- ; }
for c in "${clients[@]}"; do
	echo "| lease_renew vs bare UPDATE CAS | $c | $(cell "renew.c.$c") | $(cell "renew.s.$c") ($(range <<<"${ratios[renew.s.$c]}")) |"
	echo "| fenced one-row INSERT vs unfenced | $c | $(cell "fenced.c.$c") | $(cell "fenced.s.$c") ($(range <<<"${ratios[fenced.s.$c]}")) |"
	echo "| acquire + release vs the two bare UPDATEs | $c | $(cell "cycle.c.$c") | $(cell "cycle.s.$c") ($(range <<<"${ratios[cycle.s.$c]}")) |"
done
echo "| takeover behind a stalled fenced writer, s from the stalled grant (ttl 2 s, takeover_timeout 1 s) | 1 | $(median <<<"${took[c]}") ($(range <<<"${took[c]}")) | $(median <<<"${took[s]}") ($(range <<<"${took[s]}")) |"
echo "(pgbench, fsync on, pg_lease preloaded, a follower LISTENing in each database; medians over $rounds rounds of ${secs}s)"
