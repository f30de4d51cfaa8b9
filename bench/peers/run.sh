#!/usr/bin/env bash
# The peers benchmark: pg_lease side by side with etcd (its Go client),
# ZooKeeper (Curator) and Redis, each as its users run it, every figure in
# one run (bench/peers/README.md).  Builds the Go and Java peers, starts on
# loopback a throwaway PostgreSQL (fsync on, pg_lease preloaded), etcd and
# ZooKeeper (their defaults: fsync on) and Redis (in memory), runs
# bench/peers/peers.py, and stops them all whatever happens.
#
#   bench/peers/run.sh --pglease-peer PATH [--build DIR] [--no-pin] [--smoke] [peers.py options]
#       --smoke: every figure once, briefly; checks the harness, never timings
#       the partition figure needs root, `ip netns` and nft: run.sh makes a
#       host for the leader (tests/harness/netns.sh) and every server also
#       listens on that host's link; without them it says why and runs the rest
#       --no-pin: no CPU pinning (by default, with 2 or more CPUs, every
#       server runs on CPU 0 and the driver and every client on the others:
#       each system gets the same CPUs for its server and for its clients)
#   BENCH_PEERS_JSON=out.json bench/peers/run.sh ...   # default: DIR/peers.json
#   BENCH_PG_SETTINGS="name=value ..." bench/peers/run.sh ...   # more server settings (printed)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(pwd)/peers-build
peer=
pin=1
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--pglease-peer) peer=$2; shift 2 ;;
	--no-pin) pin=; shift ;;
	*) args+=("$1"); shift ;;
	esac
done
# The partition figure is wanted unless --only names other figures.
want_net=1
for ((i = 0; i < ${#args[@]}; i++)); do
	case ${args[i]} in
	--only) only=${args[i + 1]:-} ;;
	--only=*) only=${args[i]#--only=} ;;
	*) continue ;;
	esac
	case ",$only," in *,partition,*) want_net=1 ;; *) want_net= ;; esac
done
[ -x "$peer" ] || { echo "run.sh: --pglease-peer PATH (the pglease_peer binary) required" >&2; exit 2; }
for tool in go javac etcd redis-server; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool missing: scripts/deps.sh test" >&2; exit 1; }
done

# What else the machine was doing: the figures mean little without it.
machine()
{
	echo "peers: $1: $(date -u '+%F %T UTC'); $(uptime)"
	echo "peers: $1: top CPU consumers over 2 s (top -b):"
	top -b -n 2 -d 2 -w 160 | awk '/^top -/ {n++} n == 2' | sed -n '/PID/,$p' | head -13 | sed 's/^/peers:   /' || true
}
machine start
start=$SECONDS
"$here/build.sh" "$build"
echo "peers: Go and Java peers built in $((SECONDS - start)) s"

export PG_TEST_FSYNC=on
unset PGHOST PGPORT PGDATABASE PGUSER
source "$here/../../tests/harness/pg_cluster.sh"
source "$here/../harness/servers.sh"
source "$here/../../tests/harness/netns.sh"
work=$(mktemp -d /tmp/pglease_peers.XXXXXX)
chmod 0755 "$work"
trap 'bench_servers_stop; pg_cluster_stop_all; net_destroy_all; rm -rf "$work"' EXIT

# The partition figure's host: a namespace on a veth pair of its own, where
# the leader runs; every server also listens on this side of its link.
net_args=()
pg_listen=()
if [ -n "$want_net" ]; then
	why=
	[ "$(id -u)" -eq 0 ] || why="not root"
	command -v nft >/dev/null || why="${why:+$why; }no nft (apt-get install nftables)"
	ip netns list >/dev/null 2>&1 || why="${why:+$why; }no ip netns"
	[ -n "$why" ] || net_host leader || why="net_host failed"
	if [ -n "$why" ]; then
		echo "peers: the partition figure is skipped: $why (it needs root, ip netns and nft); the other figures run"
		net_args=(--no-net "$why")
	else
		export BENCH_LISTEN_EXTRA=$(net_server_addr leader)
		net_args=(--net-ns "${NET_NS[leader]}" --net-addr "$BENCH_LISTEN_EXTRA" --net-helpers "$here/../../tests/harness/netns.sh")
		pg_listen=(-c "listen_addresses=127.0.0.1,$BENCH_LISTEN_EXTRA")
		pg_cluster_init peers
		echo "host all all ${NET_PEER[leader]}/32 trust" >>"$(pg_cluster_dir peers)/data/pg_hba.conf"
		echo "peers: the partition figure's leader host: namespace ${NET_NS[leader]}, ${NET_PEER[leader]} there, servers also on $BENCH_LISTEN_EXTRA"
	fi
fi
pg_more=()
for setting in ${BENCH_PG_SETTINGS:-}; do pg_more+=(-c "$setting"); done
[ ${#pg_more[@]} -eq 0 ] || echo "peers: PostgreSQL settings beyond the defaults: ${BENCH_PG_SETTINGS}"
pg_cluster_start peers -c shared_preload_libraries=pg_lease -c max_connections=400 -c synchronous_commit=on "${pg_listen[@]}" "${pg_more[@]}"
psql -X -q -c "CREATE EXTENSION pg_lease"
bench_etcd_start "$work"
bench_redis_start "$work"
bench_zk_start "$work"
pg_pid=$(head -1 "$(pg_cluster_dir peers)/data/postmaster.pid")

# CPU 0 for the servers (and the processes they fork), the other CPUs for
# the driver and the clients it starts: the same budget for every system.
# Other jobs on the machine are not pinned: they take from both sides.
driver=()
if [ -n "$pin" ] && [ "$(nproc)" -ge 2 ]; then
	pin_tree()
	{
		local p
		taskset -a -p -c 0 "$1" >/dev/null
		for p in $(ps -o pid= --ppid "$1"); do pin_tree "$p"; done
	}
	for p in "$pg_pid" "$BENCH_ETCD_PID" "$BENCH_REDIS_PID" "$BENCH_ZK_PID"; do pin_tree "$p"; done
	driver=(taskset -c "1-$(($(nproc) - 1))")
	echo "peers: pinned: servers on CPU 0, the driver and its clients on CPUs 1-$(($(nproc) - 1))"
else
	echo "peers: not pinned: servers and clients share every CPU"
fi

echo "peers: PostgreSQL $PGHOST:$PGPORT (fsync on), etcd $BENCH_ETCD_URL, ZooKeeper $BENCH_ZK, Redis $BENCH_REDIS (in memory)"
echo "peers: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "peers: $(etcd --version | head -1); ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper); $(redis-server --version | cut -d' ' -f1-3); $(java -version 2>&1 | head -1)"
"${driver[@]}" python3 "$here/peers.py" --bin "$build/bin" --classpath "$(cat "$build/classpath")" --pglease-peer "$peer" \
	--pg "host=$PGHOST port=$PGPORT user=$PGUSER dbname=$PGDATABASE sslmode=disable" \
	--jdbc "jdbc:postgresql://$PGHOST:$PGPORT/$PGDATABASE?user=$PGUSER" \
	--etcd "${BENCH_ETCD_URL#http://}" --zk "$BENCH_ZK" --redis "$BENCH_REDIS" \
	--pids "pg_lease=$pg_pid,etcd=$BENCH_ETCD_PID,zookeeper=$BENCH_ZK_PID,redis=$BENCH_REDIS_PID" \
	--json "${BENCH_PEERS_JSON:-$build/peers.json}" "${net_args[@]}" "${args[@]}"
echo "peers: load after: $(cut -d' ' -f1-3 /proc/loadavg); took $((SECONDS - start)) s"
machine end
