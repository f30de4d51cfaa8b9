#!/usr/bin/env bash
# The C++ client's integration suite ($1) against the SQL edition: a cluster
# of its own with no pg_lease library, the edition installed with psql -f by
# the database's owner, and the suite run as that owner (no superuser; with
# CREATEROLE, as a managed service's admin role has, for the tests that make
# roles of their own).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"

pg_cluster_start sql_edition_client
# pg_signal_backend: what the edition needs to end another role's stalled writers
psql -X -q -c "CREATE ROLE app_owner LOGIN CREATEROLE" -c "GRANT pg_signal_backend TO app_owner" \
	-c "CREATE DATABASE app OWNER app_owner"
export PGDATABASE=app PGUSER=app_owner PGLEASE_TEST_EDITION=pg_lease_sql
source "$here/../../scripts/lib/sql_edition.sh"
sql_edition_psql_script "$PG_CLUSTER_ROOT/pg_lease_sql.sql"
psql -X -q -v ON_ERROR_STOP=1 -f "$PG_CLUSTER_ROOT/pg_lease_sql.sql"
test "$(psql -X -A -t -c "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")" = f
"$1"
