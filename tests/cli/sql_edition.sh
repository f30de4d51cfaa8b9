#!/usr/bin/env bash
# The pglease command's tests (the test_NAME.sh given as arguments) against
# the SQL edition: a cluster of its own with no pg_lease library, the
# edition installed with psql -f by the database's owner, and the tests run
# as that owner (no superuser; CREATEROLE and CREATEDB as a managed
# service's admin role has, for the tests that make roles and databases;
# pg_signal_backend, which the edition needs to end other roles' writers).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"

pg_cluster_start cli_sql_edition
psql -X -q -c "CREATE ROLE app_owner LOGIN CREATEROLE CREATEDB" \
	-c "GRANT pg_signal_backend TO app_owner" -c "CREATE DATABASE app OWNER app_owner" || exit 1
export PGDATABASE=app PGUSER=app_owner PGLEASE_SQL_EDITION=$PG_CLUSTER_ROOT/pg_lease_sql.sql
source "$here/../../scripts/lib/sql_edition.sh"
sql_edition_psql_script "$PGLEASE_SQL_EDITION" || exit 1
psql -X -q -v ON_ERROR_STOP=1 -f "$PGLEASE_SQL_EDITION" || exit 1

failed=()
for name in "$@"; do
	if bash "$here/test_$name.sh" >"$PG_CLUSTER_ROOT/$name.log" 2>&1; then
		echo "ok - $name"
	else
		echo "not ok - $name"
		sed 's/^/    /' "$PG_CLUSTER_ROOT/$name.log" | tail -20
		failed+=("$name")
	fi
done
echo "$(($# - ${#failed[@]})) of $# passed against the SQL edition${failed:+; failed: ${failed[*]}}"
[ ${#failed[@]} -eq 0 ]
