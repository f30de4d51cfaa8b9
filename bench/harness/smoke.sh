#!/usr/bin/env bash
# bench.smoke: a few seconds of every figure against the PostgreSQL server of
# the PG* environment (with the extension created), plus etcd and Redis when
# they are installed.  Checks that the harness works, never timings.
#   bench/harness/smoke.sh PGLEASE_BENCH JSON_OUT
set -euo pipefail
bench=$1
json=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/servers.sh"
dir=$(mktemp -d /tmp/pglease_bench_smoke.XXXXXX)
trap 'bench_servers_stop; rm -rf "$dir"' EXIT

args=(--smoke --json "$json")
if bench_etcd_start "$dir"; then args+=(--etcd "$BENCH_ETCD_URL"); else echo "smoke: no etcd, skipping it"; fi
if bench_redis_start "$dir"; then args+=(--redis "$BENCH_REDIS"); else echo "smoke: no redis, skipping it"; fi
"$bench" "${args[@]}"
