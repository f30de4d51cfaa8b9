#!/usr/bin/env bash
# pglease::observer across a server restart: runs the test binary ($1)
# against a throwaway cluster, with PGLEASE_TEST_PG_CTL set to the pg_ctl
# command that stops and starts it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"

pg_cluster_start observer_restart
psql -X -q -c 'CREATE EXTENSION pg_lease'
dir=$(pg_cluster_dir observer_restart)
owner=""
[ "$(id -u)" -eq 0 ] && owner="runuser -u postgres --"
export PGLEASE_TEST_PG_CTL="$owner $PG_BIN/pg_ctl -D $dir/data -l $dir/server.log -t 60"
"$1"
