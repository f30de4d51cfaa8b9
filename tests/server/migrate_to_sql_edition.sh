#!/usr/bin/env bash
# Moving from the C edition to a managed service (issue 52, item 6): a
# PostgreSQL 15 database with the C edition (leases, events, epochs, a
# downstream floor, fenced rows in a table with a foreign key) dumped with
# pg_dump, and restored into PostgreSQL N (default 17, from
# scripts/pg-major.sh's cache, copied without any pg_lease file: a managed
# service has none) where a plain database owner (no superuser) installed
# the SQL edition with psql -f.
#   - the documented path (docs/operations.md, "Moving from the C edition
#     to a managed service"): one pg_restore of the whole dump, without the
#     extension's two entries; and plain pg_dump SQL through psql: every
#     lease, event, floor and fenced row kept, the next epoch above every
#     one issued before, stale tokens refused (LS001);
#   - the obvious path, pg_restore --schema-only then --data-only (and the
#     same as plain SQL dumps): the fence refuses the data step's rows
#     written under earlier grants, so it must either keep every row or
#     fail loudly, each refusal naming the working path, and that path
#     (the fence triggers disabled for the data step) then keeps them all;
#   - the same two steps into a C edition database: the same hint.
#
#   tests/server/migrate_to_sql_edition.sh [N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

major=${1:-17}
export PGTZ=UTC
src_bin=$PG_BIN			# the C edition's server (the build under test)
hint='If this COPY restores a dump'
work=$PG_CLUSTER_ROOT

# sqlstate SQL: the SQLSTATE the statement fails with, or "ok".
sqlstate()
{
	local out
	out=$(psql -X -q -A -t -v ON_ERROR_STOP=1 -c "\\set VERBOSITY sqlstate" -c "$1" 2>&1) && { echo ok; return; }
	echo "$out" | sed -n 's/^ERROR:  *//p' | head -1
}
# fingerprint: every row of the lease store and of the application's
# tables, in a fixed order (the history's ids and the counters included).
fingerprint()
{
	local t
	for t in leases lease_events lease_floors jobs job_runs reports mirror; do
		printf '%s %s\n' "$t" "$(q "SELECT count(*) || ' ' || coalesce(md5(string_agg(r::text, '|' ORDER BY r::text)), '-') FROM $t r")"
	done
	q "SELECT 'counters ' || (SELECT last_value FROM lease_epoch_seq) || ' ' || (SELECT last_value FROM lease_events_id_seq)"
}
max_epoch() { q "SELECT greatest((SELECT max(epoch) FROM leases), (SELECT max(epoch) FROM lease_events))"; }

# --- the source: PostgreSQL 15, the C edition ------------------------------
pg_cluster_start source
q "CREATE ROLE app_owner LOGIN" >/dev/null
q "CREATE DATABASE app OWNER app_owner" >/dev/null
export PGDATABASE=app
q "CREATE EXTENSION pg_lease" >/dev/null
q "GRANT EXECUTE ON FUNCTION lease_raise(text, text, bigint), lease_revoke(text) TO app_owner" >/dev/null
export PGUSER=app_owner
q "CREATE TABLE jobs (id int PRIMARY KEY, title text NOT NULL)" >/dev/null
# fenced, with a foreign key (its system triggers are why
# pg_restore --disable-triggers needs a superuser); sorts before leases
q "CREATE TABLE job_runs (id int PRIMARY KEY, job int NOT NULL REFERENCES jobs, epoch bigint NOT NULL)" >/dev/null
# fenced, sorts after leases (its rows are restored after the lease rows)
q "CREATE TABLE reports (id int PRIMARY KEY, body text, epoch bigint NOT NULL)" >/dev/null
# fenced downstream, by a lease of another database (a floor)
q "CREATE TABLE mirror (id int PRIMARY KEY, epoch bigint NOT NULL)" >/dev/null
q "SELECT lease_fence('job_runs', 'job'), lease_fence('reports', 'job'),
	lease_fence('mirror', 'up', store => 'upstream-db')" >/dev/null
q "INSERT INTO jobs VALUES (1, 'nightly'), (2, 'hourly')" >/dev/null
e1=$(q "SELECT epoch FROM lease_acquire('job', 'h1', '1h')")
q "INSERT INTO job_runs VALUES (1, 1, $e1), (2, 2, $e1)" >/dev/null
q "INSERT INTO reports VALUES (1, 'first', $e1)" >/dev/null
q "SELECT lease_release('job', 'h1', $e1)" >/dev/null
e2=$(q "SELECT epoch FROM lease_acquire('job', 'h2', '1h')")
q "BEGIN; SELECT lease_use('job', $e2); INSERT INTO job_runs VALUES (3, 1, 0); INSERT INTO reports VALUES (2, 'second', 0); COMMIT" >/dev/null
q "SELECT lease_acquire('other', 'x', '1h')" >/dev/null
e_free=$(q "SELECT epoch FROM lease_acquire('gone', 'y', '1h')")
q "SELECT lease_revoke('gone')" >/dev/null
q "SELECT lease_raise('upstream-db', 'up', 400)" >/dev/null
q "BEGIN; SELECT lease_use('up', 400); INSERT INTO mirror VALUES (1, 400); COMMIT" >/dev/null
q "SELECT lease_raise('upstream-db', 'up', 500)" >/dev/null
q "BEGIN; SELECT lease_use('up', 500); INSERT INTO mirror VALUES (2, 500); COMMIT" >/dev/null
source_print=$(PGUSER=postgres fingerprint)	# (the counters: the superuser's)
issued=$(max_epoch)
check "the source has leases, events, a floor and fenced rows of two grants ($e1, $e2)" \
	test "$(q "SELECT count(*) FROM leases")/$(q "SELECT count(*) FROM lease_events")/$(q "SELECT epoch FROM lease_floors")/$(q "SELECT count(DISTINCT epoch) FROM job_runs")" = 3/6/500/2
dump=$work/app.dump
PGUSER=postgres "$src_bin/pg_dump" -Fc -f "$dump"
PGUSER=postgres "$src_bin/pg_dump" -f "$work/app.sql"
PGUSER=postgres "$src_bin/pg_dump" --schema-only -f "$work/schema.sql"
PGUSER=postgres "$src_bin/pg_dump" --data-only -f "$work/data.sql"
chmod a+r "$work"/*.sql "$dump"

# The same two steps into a C edition database (the superuser restores,
# as on a self-hosted server): the fence refuses alike, with the hint.
PGUSER=postgres q "CREATE DATABASE c_two OWNER app_owner" >/dev/null
PGUSER=postgres "$src_bin/pg_restore" --schema-only -d c_two "$dump"
PGUSER=postgres "$src_bin/pg_restore" --data-only -d c_two "$dump" 2>"$work/c_two.err" || true
check "C edition: the data-only step keeps every fenced row, or each refusal names the working path" \
	bash -c '[ "$(PGDATABASE=c_two psql -X -A -t -c "SELECT (SELECT count(*) FROM job_runs) + (SELECT count(*) FROM reports)")" = 5 ] ||
		[ "$(grep -c "HINT:  $1" "$2")" -ge "$(grep -c "COPY failed" "$2")" -a "$(grep -c "COPY failed" "$2")" -gt 0 ]' _ "$hint" "$work/c_two.err"
pg_cluster_stop source

# --- the target: PostgreSQL N, no pg_lease files, a plain owner ------------
# The server of scripts/pg-major.sh's cache (fetched by it when missing;
# it is not called when the server is there, as it would build and install
# pg_lease into that tree), copied without pg_lease: the cache stays as it is.
cache=${PGLEASE_MAJORS_CACHE:-/var/cache/pglease/majors/$major}
[ -x "$cache/native/bin/postgres" ] || "$root/scripts/pg-major.sh" "$major" >/dev/null
tree=$work/pg$major
mkdir -p "$tree"
cp -a "$cache/native/." "$tree/"
rm -f "$tree"/lib/postgresql/pg_lease.* "$tree"/share/postgresql/extension/pg_lease*
chmod -R a+rX "$tree"
PG_BIN=$tree/bin
export PGUSER=postgres PGDATABASE=postgres
pg_cluster_start target
check "the target is PostgreSQL $major with no pg_lease files" \
	test "$(q "SHOW server_version_num" | cut -c1-2)/$(q "SELECT count(*) FROM pg_available_extensions WHERE name LIKE 'pg_lease%'")" = "$major/0"
q "CREATE ROLE app_owner LOGIN" >/dev/null
source "$root/scripts/lib/sql_edition.sh"
sql_edition_psql_script "$work/pg_lease_sql.sql"
# database DB: a new database of app_owner with the SQL edition installed
# by that owner with psql -f; the PG* variables name it and app_owner.
database()
{
	export PGUSER=postgres PGDATABASE=postgres
	q "CREATE DATABASE $1 OWNER app_owner" >/dev/null
	export PGUSER=app_owner PGDATABASE=$1
	psql -X -q -v ON_ERROR_STOP=1 -f "$work/pg_lease_sql.sql"
}
# restored WHAT: the checks of a completed move (in the current database)
restored()
{
	check "$1: every lease, event, floor and fenced row kept, and the counters" \
		test "$(fingerprint)" = "$source_print"
	check "$1: a new lease's first grant succeeds (the history's ids go on)" \
		test "$(q "SELECT epoch FROM lease_acquire('late', 'z', '1h')")" -gt "$issued"
	q "SELECT lease_revoke('job')" >/dev/null
	local next
	next=$(q "SELECT epoch FROM lease_acquire('job', 'h3', '1h') WHERE acquired")
	check "$1: the next grant ($next) is above every epoch issued before ($issued)" \
		test -n "$next" -a "${next:-0}" -gt "$issued"
	check "$1: the stale tokens are refused (LS001), the new one passes" \
		test "$(sqlstate "BEGIN; SELECT lease_use('job', $e2); INSERT INTO reports VALUES (10, 'stale', 0); COMMIT")/$(sqlstate "INSERT INTO job_runs VALUES (10, 1, $e1)")/$(sqlstate "BEGIN; SELECT lease_use('job', $next); INSERT INTO job_runs VALUES (11, 1, 0); COMMIT")" = LS001/LS001/ok
	check "$1: the floor is kept: a token below it refused (LS001), its own passes" \
		test "$(sqlstate "BEGIN; SELECT lease_use('up', 400); INSERT INTO mirror VALUES (10, 0); COMMIT")/$(sqlstate "BEGIN; SELECT lease_use('up', 500); INSERT INTO mirror VALUES (11, 0); COMMIT")" = LS001/ok
	check "$1: a grant released before the move stays free with its epoch" \
		test "$(q "SELECT holder IS NULL AND epoch = $e_free FROM leases WHERE name = 'gone'")" = t
}

# The documented path: one pg_restore of the whole dump, the extension's
# own entries left out (the SQL edition stands in for them).
database moved
"$src_bin/pg_restore" -l "$dump" | grep -v ' EXTENSION - pg_lease *$\| COMMENT - EXTENSION pg_lease *$' >"$work/items"
check "documented path: pg_restore -L (the extension left out) --no-owner, no error" \
	"$src_bin/pg_restore" --no-owner -L "$work/items" -d moved "$dump"
check "the owner is no superuser" test "$(q "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")" = f
restored "documented path"

# The same without the list: the two errors of the extension's entries.
database whole
"$src_bin/pg_restore" --no-owner -d whole "$dump" 2>"$work/whole.err" || true
check "a whole pg_restore fails only on the extension's two entries" \
	test "$(grep -c '^pg_restore: error: could not execute query' "$work/whole.err")/$(grep -c 'EXTENSION' "$work/whole.err")" = 2/2
restored "whole pg_restore"

# Plain pg_dump SQL through psql: the same two errors, the rest kept.
database plain
psql -X -q -f "$work/app.sql" >/dev/null 2>"$work/plain.err" || true
check "plain SQL: only the extension's two statements fail" \
	test "$(grep -c 'ERROR:' "$work/plain.err")" = 2
restored "plain SQL"

# The obvious path: --schema-only, then --data-only.  The schema step makes
# the fence triggers, so the data step's rows of earlier grants are refused:
# the move must keep every fenced row or fail loudly, each refusal naming
# the working path.
# loud NAME STDERR: the data step of NAME kept every fenced row, or it
# failed on them and each COPY refused carries the hint.
loud()
{
	local failed
	failed=$(grep -c 'COPY failed\|^psql:.*ERROR:' "$2" || true)
	if [ "$(q "SELECT (SELECT count(*) FROM job_runs) + (SELECT count(*) FROM reports) + (SELECT count(*) FROM mirror)")" = 7 ]; then
		check "$1: the data step kept every fenced row" true
	else
		check "$1: the data step failed loudly, every refusal naming the working path ($failed refused)" \
			test "$failed" -gt 0 -a "$(grep -c "HINT:  $hint" "$2")" = "$failed"
		# the hint's path: the fence triggers off for the data step of the
		# fenced tables (the owner may; no superuser), then on again
		q "ALTER TABLE job_runs DISABLE TRIGGER pg_lease_fence; ALTER TABLE reports DISABLE TRIGGER pg_lease_fence;
			ALTER TABLE mirror DISABLE TRIGGER pg_lease_fence" >/dev/null
		"$3"
		q "ALTER TABLE job_runs ENABLE TRIGGER pg_lease_fence; ALTER TABLE reports ENABLE TRIGGER pg_lease_fence;
			ALTER TABLE mirror ENABLE TRIGGER pg_lease_fence" >/dev/null
	fi
}
fenced_data() { "$src_bin/pg_restore" --no-owner --data-only -t job_runs -t reports -t mirror -d two "$dump"; }
database two
"$src_bin/pg_restore" --no-owner --schema-only -d two "$dump" 2>/dev/null || true
"$src_bin/pg_restore" --no-owner --data-only -d two "$dump" 2>"$work/two.err" || true
loud "schema-only, then data-only" "$work/two.err" fenced_data
restored "schema-only, then data-only"

fenced_plain() { grep -v '^SELECT pg_catalog.setval' "$work/data.sql" | awk '/^COPY public\.(job_runs|reports|mirror) /,/^\\\.$/' | psql -X -q -v ON_ERROR_STOP=1 >/dev/null; }
database plain_two
psql -X -q -f "$work/schema.sql" >/dev/null 2>&1 || true
psql -X -q -f "$work/data.sql" >/dev/null 2>"$work/plain_two.err" || true
loud "plain SQL, schema then data" "$work/plain_two.err" fenced_plain
restored "plain SQL, schema then data"

finish
