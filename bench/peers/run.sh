#!/usr/bin/env bash
# The peers benchmark: pg_lease side by side with etcd (its Go client),
# ZooKeeper (Curator) and Redis, each as its users run it, every figure in
# one run (bench/peers/README.md).  Builds the Go and Java peers, starts on
# loopback a throwaway PostgreSQL (fsync on, pg_lease preloaded), etcd and
# ZooKeeper (their defaults: fsync on) and Redis (in memory), runs
# bench/peers/peers.py, and stops them all whatever happens.
#
#   bench/peers/run.sh --pglease-peer PATH [--build DIR] [--smoke] [peers.py options]
#       --smoke: every figure once, briefly; checks the harness, never timings
#   BENCH_PEERS_JSON=out.json bench/peers/run.sh ...   # default: DIR/peers.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(pwd)/peers-build
peer=
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--pglease-peer) peer=$2; shift 2 ;;
	*) args+=("$1"); shift ;;
	esac
done
[ -x "$peer" ] || { echo "run.sh: --pglease-peer PATH (the pglease_peer binary) required" >&2; exit 2; }
for tool in go javac etcd redis-server; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool missing: scripts/deps.sh test" >&2; exit 1; }
done

start=$SECONDS
"$here/build.sh" "$build"
echo "peers: Go and Java peers built in $((SECONDS - start)) s"

export PG_TEST_FSYNC=on
unset PGHOST PGPORT PGDATABASE PGUSER
source "$here/../../tests/harness/pg_cluster.sh"
source "$here/../servers.sh"
work=$(mktemp -d /tmp/pglease_peers.XXXXXX)
chmod 0755 "$work"
trap 'bench_servers_stop; pg_cluster_stop_all; rm -rf "$work"' EXIT
pg_cluster_start peers -c shared_preload_libraries=pg_lease -c max_connections=400 -c synchronous_commit=on
psql -X -q -c "CREATE EXTENSION pg_lease"
bench_etcd_start "$work"
bench_redis_start "$work"
bench_zk_start "$work"
pg_pid=$(head -1 "$(pg_cluster_dir peers)/data/postmaster.pid")

echo "peers: PostgreSQL $PGHOST:$PGPORT (fsync on), etcd $BENCH_ETCD_URL, ZooKeeper $BENCH_ZK, Redis $BENCH_REDIS (in memory)"
echo "peers: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "peers: $(etcd --version | head -1); ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper); $(redis-server --version | cut -d' ' -f1-3); $(java -version 2>&1 | head -1)"
python3 "$here/peers.py" --bin "$build/bin" --classpath "$(cat "$build/classpath")" --pglease-peer "$peer" \
	--pg "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE sslmode=disable" \
	--jdbc "jdbc:postgresql://$PGHOST:$PGPORT/$PGDATABASE?user=$PGUSER" \
	--etcd "${BENCH_ETCD_URL#http://}" --zk "$BENCH_ZK" --redis "$BENCH_REDIS" \
	--pids "pg_lease=$pg_pid,etcd=$BENCH_ETCD_PID,zookeeper=$BENCH_ZK_PID,redis=$BENCH_REDIS_PID" \
	--json "${BENCH_PEERS_JSON:-$build/peers.json}" "${args[@]}"
echo "peers: load after: $(cut -d' ' -f1-3 /proc/loadavg); took $((SECONDS - start)) s"
