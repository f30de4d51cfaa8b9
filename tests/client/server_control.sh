#!/usr/bin/env bash
# The client tests that stop, restart or freeze their server, or need a
# small lock table: runs the test
# binary ($1) against a throwaway cluster, with PGLEASE_TEST_PG_CTL set to
# the pg_ctl command that stops and starts it and PGLEASE_TEST_DATA_DIR to
# its data directory (postmaster.pid names the postmaster).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"

# A small lock table (a few hundred entries) for test_pg_lock_table.cpp, in
# the configuration file: the other tests' restarts keep it.
pg_cluster_init server_control
printf 'max_locks_per_transaction = 10\nmax_connections = 20\n' \
	>>"$(pg_cluster_dir server_control)/data/postgresql.conf"
pg_cluster_start server_control
psql -X -q -c 'CREATE EXTENSION pg_lease'
dir=$(pg_cluster_dir server_control)
owner=""
[ "$(id -u)" -eq 0 ] && owner="runuser -u postgres --"
export PGLEASE_TEST_PG_CTL="$owner $PG_BIN/pg_ctl -D $dir/data -l $dir/server.log -t 60"
export PGLEASE_TEST_DATA_DIR="$dir/data"
# A test that froze the postmaster and then failed must not freeze the stop.
trap 'kill -CONT "$(head -1 "$dir/data/postmaster.pid" 2>/dev/null)" 2>/dev/null; pg_cluster_stop_all' EXIT
"$1"
