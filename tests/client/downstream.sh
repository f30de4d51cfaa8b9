#!/usr/bin/env bash
# Runs pglease_downstream_tests (test_pg_downstream*.cpp) against two
# clusters of its own: the lease store and a downstream database.
#   tests/client/downstream.sh PATH_OF_pglease_downstream_tests
set -euo pipefail
source "$(dirname "$0")/../harness/pg_cluster.sh"
pg_cluster_start ds_store >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_lease" >/dev/null
export PGLEASE_STORE="host=$PGHOST port=$PGPORT user=$PGUSER dbname=postgres"
pg_cluster_start ds_down >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_lease" >/dev/null
export PGLEASE_DOWNSTREAM="host=$PGHOST port=$PGPORT user=$PGUSER dbname=postgres"
"$@"
