#!/usr/bin/env bash
# The benchmark command.  Builds pglease_bench and the extension, installs
# the extension, starts on loopback a throwaway PostgreSQL with default
# durability (fsync on, synchronous_commit on) and Redis (in memory, no
# persistence), runs every figure, stops them all whatever happens, prints
# one table and writes a JSON file (etcd is compared in bench/peers,
# through its own Go client; pglease_bench --etcd URL, its JSON gateway, is
# the old method and no longer run here).  Then
# bench/pgbench/notify_cost.sh on a server of its own: the acquire+release cycle and
# handovers with NOTIFY at commit, then from the notifier worker (preloaded);
# bench/pgbench/pgbench_ratios.sh: renew and the fenced INSERT measured by pgbench;
# and bench/installed/installed_ratios.sh: renew, the acquire+release cycle and
# run_fenced measured by a program built against the installed client
# (find_package, from the bench build dir installed into a private prefix).
# Last, bench/peers/run.sh: pg_lease side by side with etcd (its Go client),
# ZooKeeper (Curator) and Redis, each as its users run it: failover,
# handover, a leader's host cut off (as root), a paused leader's writes,
# durable operations, 100,000 leases.
#
#   scripts/bench.sh                          # full run, 50-75 minutes on 2 cores (growth: 6-8, many: 2, installed package: 3, peers: 20-40, 7 more for the cut)
#   scripts/bench.sh --rounds 3 --seconds 0.5 # pglease_bench options
#   BENCH_JSON=out.json scripts/bench.sh      # default: $build/bench-results.json
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/deps.sh bench
sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)

build=${PGLEASE_BENCH_BUILD_DIR:-${TMPDIR:-/tmp}/pglease-bench-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# pglease_client and pglease_testing: what bench/installed/installed_ratios.sh
# installs (cmake --install --component development) from this build dir
cmake --build "$build" -j "$(nproc)" --target pglease_bench pglease_peer extension pglease_client pglease_testing
"${sudo[@]}" make -s -f Makefile.pgxs install >/dev/null

export PG_TEST_FSYNC=on # the harness's default is fsync=off: not for benchmarks
source tests/harness/pg_cluster.sh
source bench/harness/servers.sh
work=$(mktemp -d /tmp/pglease_bench.XXXXXX)
chmod 0755 "$work"
trap 'bench_servers_stop; pg_cluster_stop_all; rm -rf "$work"' EXIT
pg_cluster_start bench -c max_connections=200
psql -X -q -c "CREATE EXTENSION pg_lease"
bench_redis_start "$work"

json=${BENCH_JSON:-$build/bench-results.json}
echo "bench: PostgreSQL $PGHOST:$PGPORT (fsync on), redis $BENCH_REDIS"
echo "bench: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/pglease_bench" --redis "$BENCH_REDIS" --json "$json" "$@"
echo "bench: load after: $(cut -d' ' -f1-3 /proc/loadavg); JSON in $json"
# NOTIFY's cost: acquire+release cycles against two plain UPDATEs, and
# handovers, on a server of its own without and with shared_preload_libraries
echo "bench: NOTIFY at commit vs the notifier worker (bench/pgbench/notify_cost.sh)"
PGLEASE_BENCH="$build/bench/pglease_bench" bench/pgbench/notify_cost.sh "${BENCH_NOTIFY_SECONDS:-3}" "${BENCH_NOTIFY_ROUNDS:-5}"
# The same goals measured by pgbench alone: renew vs a bare UPDATE CAS and
# a fenced INSERT transaction vs the unfenced one, preloaded, a follower LISTENing
echo "bench: pgbench alone (bench/pgbench/pgbench_ratios.sh)"
bench/pgbench/pgbench_ratios.sh "${BENCH_NOTIFY_SECONDS:-3}" "${BENCH_NOTIFY_ROUNDS:-5}"
# The three goals from a program built against the installed C++ package:
# renew, the acquire+release cycle and run_fenced, each against its baseline,
# preloaded, a follower LISTENing
echo "bench: WAL and MultiXacts per fenced transaction (bench/pgbench/fence_cost.sh)"
bench/pgbench/fence_cost.sh "${BENCH_FENCE_SECONDS:-10}"

echo "bench: the fence's CPU cost in instructions (bench/pgbench/fence_callgrind.sh)"
bench/pgbench/fence_callgrind.sh

echo "bench: the installed C++ package (bench/installed/installed_ratios.sh)"
bench/installed/installed_ratios.sh "$build" -- --rounds "${BENCH_NOTIFY_ROUNDS:-5}" --seconds "${BENCH_INSTALLED_SECONDS:-1}"
# pg_lease against etcd, ZooKeeper and Redis, each through its own client,
# on servers of its own (bench/peers/README.md)
echo "bench: peers (bench/peers/run.sh)"
bench/peers/run.sh --build "$build/bench/peers" --pglease-peer "$build/bench/pglease_peer" ${BENCH_PEERS_ARGS:-}
