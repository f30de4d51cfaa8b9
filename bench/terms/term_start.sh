#!/usr/bin/env bash
# What raising downstream floors adds to the start of a term (issue 25):
# a lease store cluster and a downstream cluster with 8 databases
# (ds1..ds8), pg_lease in each; bench/terms/term_start.cpp times elector::start()
# to on_started_leading with 0, 1 and 8 downstreams.
#
#   bench/terms/term_start.sh BUILD_DIR [ROUNDS]     (default 30)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$1/bench/pglease_term_start
rounds=${2:-30}
# Durable, as production: every raise and the reference INSERT flush WAL.
export PG_TEST_FSYNC=on
source "$here/../../tests/harness/pg_cluster.sh"
pg_cluster_start ts_store >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_lease" >/dev/null
store="host=$PGHOST port=$PGPORT user=$PGUSER dbname=postgres"
pg_cluster_start ts_down >/dev/null
for i in 1 2 3 4 5 6 7 8; do
	psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE ds$i" >/dev/null
	psql -X -q -v ON_ERROR_STOP=1 -d "ds$i" -c "CREATE EXTENSION pg_lease" >/dev/null
done
"$bin" "$store" "host=$PGHOST port=$PGPORT user=$PGUSER" "$rounds"
