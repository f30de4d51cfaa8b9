#!/usr/bin/env bash
# Runs pglease_syncrep_tests (test_pg_syncrep.cpp) against a cluster of its
# own whose synchronous standby never answers.
#   tests/client/syncrep.sh PATH_OF_pglease_syncrep_tests
set -euo pipefail
source "$(dirname "$0")/../harness/pg_cluster.sh"
pg_cluster_start syncrep >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_lease" \
	-c "ALTER SYSTEM SET synchronous_standby_names = 'nobody'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.3
"$1"
