#!/usr/bin/env bash
# The pg_regress and isolation suites against the SQL edition (no C): a
# cluster of its own with no pg_lease library, the edition installed with
# psql -f by the database's owner (no superuser; CREATEROLE and
# pg_signal_backend, as a managed service's admin role has), the suites run
# as that owner in that database (--use-existing).  Expected output is the C
# edition's, except the files in regress/sql_edition/expected/, each listed
# with its reason in regress/sql_edition/README.md.
#
#   tests/server/sql_edition_regress.sh [regress|iso] [NAME...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/../harness/pg_cluster.sh"

which=${1:-all}
shift || true
pg_cluster_start sql_edition_regress
pgxs=$("$PG_BIN/pg_config" --pgxs 2>/dev/null || pg_config --pgxs)
pgxs=$(dirname "$(dirname "$(dirname "$pgxs")")") # .../lib/pgxs
psql -X -q -c "CREATE ROLE app_owner LOGIN CREATEROLE" -c "GRANT pg_signal_backend TO app_owner" \
	-c "CREATE DATABASE contrib_regression OWNER app_owner"
pg_public_schema_as_15 contrib_regression app_owner
source "$root/scripts/lib/sql_edition.sh"
sql_edition_psql_script "$PG_CLUSTER_ROOT/pg_lease_sql.sql"
PGUSER=app_owner PGDATABASE=contrib_regression \
	psql -X -q -v ON_ERROR_STOP=1 -f "$PG_CLUSTER_ROOT/pg_lease_sql.sql"

# The input folder: the suites as they are, the C edition's expected files
# with the edition's own put over them.
in=$PG_CLUSTER_ROOT/input
mkdir -p "$in/expected"
ln -s "$root/regress/sql" "$in/sql"
ln -s "$root/regress/specs" "$in/specs"
cp "$root"/regress/expected/*.out "$in/expected/"
if compgen -G "$root/regress/sql_edition/expected/*.out" >/dev/null; then
	cp "$root"/regress/sql_edition/expected/*.out "$in/expected/"
fi
chmod -R a+rX "$in"

names() { # names DIR EXT: the suites of DIR, or the ones given
	if [ $# -gt 2 ]; then
		shift 2
		echo "$@"
	else
		ls "$1" | sed -n "s/\\.$2\$//p" | sort | tr '\n' ' '
	fi
}
# keep_diffs KIND: the diffs on stdout (their head), and whole in
# $SQL_EDITION_DIFFS/KIND.diffs when that is set (the cluster's folder goes).
keep_diffs() {
	local f=$PG_CLUSTER_ROOT/$1/regression.diffs
	head -300 "$f"
	if [ -n "${SQL_EDITION_DIFFS:-}" ]; then
		mkdir -p "$SQL_EDITION_DIFFS"
		cp "$f" "$SQL_EDITION_DIFFS/$1.diffs"
		cp -r "$PG_CLUSTER_ROOT/$1/results" "$SQL_EDITION_DIFFS/$1.results" 2>/dev/null || true
	fi
}
common=(--use-existing --dbname=contrib_regression --user=app_owner --host="$PGHOST"
	--port="$PGPORT" --inputdir="$in")
status=0
if [ "$which" = all ] || [ "$which" = regress ]; then
	# shellcheck disable=SC2046
	"$pgxs/src/test/regress/pg_regress" "${common[@]}" --outputdir="$PG_CLUSTER_ROOT/regress" \
		--bindir="$(dirname "$(command -v psql)")" $(names "$root/regress/sql" sql "$@") || status=1
	[ $status -eq 0 ] || keep_diffs regress
fi
if [ "$which" = all ] || [ "$which" = iso ]; then
	# A step still waiting after 20 s is cancelled (isolationtester's own
	# bound is 300 s): no step of the suites waits that long in either
	# edition, so a lock that is never given up fails in 20 s, not 300.
	export PGISOLATIONTIMEOUT=20
	# shellcheck disable=SC2046
	"$pgxs/src/test/isolation/pg_isolation_regress" "${common[@]}" \
		--outputdir="$PG_CLUSTER_ROOT/iso" $(names "$root/regress/specs" spec "$@") || {
		keep_diffs iso
		status=1
	}
fi
exit $status
