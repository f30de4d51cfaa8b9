#!/usr/bin/env bash
# pglease_group_fault with its members on hosts of their own (issue 38):
# 8 network namespaces (tests/harness/netns.sh) and a cluster of its own
# that listens on their links; every third fault cuts a member off.
#   tests/group_fault/net.sh PATH_OF_pglease_group_fault [options]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/../harness/netns.sh"
trap 'net_destroy_all; pg_cluster_stop_all' EXIT
hosts=""
addrs=127.0.0.1
for i in 1 2 3 4 5 6 7 8; do
	net_host "m$i"
	hosts="$hosts ${NET_NS[m$i]}=$(net_server_addr "m$i")"
	addrs="$addrs,$(net_server_addr "m$i")"
done
pg_cluster_init group
echo "host all all 10.231.0.0/16 trust" >>"$(pg_cluster_dir group)/data/pg_hba.conf"
pg_cluster_start group "-c listen_addresses=$addrs -c max_connections=200" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_lease" >/dev/null
bin=$1
shift
PGLEASE_NET_HOSTS=$hosts "$bin" --net 1 "$@"
