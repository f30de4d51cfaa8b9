#!/usr/bin/env bash
# Runs pglease_net_tests (test_net_bounds.cpp) inside a host of its own
# (tests/harness/netns.sh), against a cluster of its own that listens on
# the host's link; the binary cuts its host itself.
#   tests/net/bounds.sh PATH_OF_pglease_net_tests
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/../harness/netns.sh"
trap 'net_destroy_all; pg_cluster_stop_all' EXIT
net_host client
addr=$(net_server_addr client)
pg_cluster_init net
echo "host all all 10.231.0.0/16 trust" >>"$(pg_cluster_dir net)/data/pg_hba.conf"
pg_cluster_start net "-c listen_addresses=127.0.0.1,$addr" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_lease" >/dev/null
net_exec client env PGLEASE_NET_CONNINFO="host=$addr port=$PGPORT user=postgres dbname=postgres" "$@"
