# etcd and Redis on free loopback ports for the benchmarks, sourced by
# scripts/bench.sh and bench/smoke.sh.
#
#   source bench/harness/servers.sh
#   bench_etcd_start DIR      # sets BENCH_ETCD_URL
#   bench_redis_start DIR     # sets BENCH_REDIS (host:port)
#   bench_zk_start DIR        # sets BENCH_ZK (host:port), BENCH_ZK_PID
#   bench_servers_stop        # stops them all (call it from your EXIT trap)
#
# etcd keeps its defaults (its WAL is fsynced); ZooKeeper too (forceSync:
# its transaction log is fsynced before it answers), with tickTime 500 ms so
# that a 2 s session timeout is allowed (the default 2 s tick makes 4 s the
# minimum); Redis runs as people run it for locks: in memory, no AOF, no
# snapshots, so it is not durable.  BENCH_ETCD_PID and BENCH_REDIS_PID name
# the server processes.
#
# BENCH_LISTEN_EXTRA=ADDR (optional): etcd and Redis also listen on ADDR (a
# network-fault host's link, tests/harness/netns.sh); ZooKeeper, which has
# one client address, listens on ADDR instead of 127.0.0.1 (a local address:
# this namespace still reaches it over loopback) and BENCH_ZK names it.

BENCH_PIDS=()

source "$(dirname "${BASH_SOURCE[0]}")/../../tests/harness/free_port.sh"

bench_wait()
{
	local what=$1 tries=$2
	shift 2
	for _ in $(seq 1 "$tries"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "bench: $what did not start" >&2
	return 1
}

bench_etcd_start()
{
	local dir=$1 client peer
	command -v etcd >/dev/null || return 1
	client=$(pg_free_port) && peer=$(pg_free_port) || return 1
	mkdir -p "$dir"
	etcd --name bench --data-dir "$dir/etcd" \
		--listen-client-urls "http://127.0.0.1:$client${BENCH_LISTEN_EXTRA:+,http://$BENCH_LISTEN_EXTRA:$client}" --advertise-client-urls "http://127.0.0.1:$client" \
		--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "bench=http://127.0.0.1:$peer" --log-level error >"$dir/etcd.log" 2>&1 &
	BENCH_PIDS+=($!)
	BENCH_ETCD_PID=$!
	BENCH_ETCD_URL="http://127.0.0.1:$client"
	bench_wait etcd 100 etcdctl --endpoints "$BENCH_ETCD_URL" endpoint health
}

bench_redis_start()
{
	local dir=$1 port
	command -v redis-server >/dev/null || return 1
	port=$(pg_free_port) || return 1
	mkdir -p "$dir"
	# protected mode refuses every address but loopback: off only when it
	# also listens on a fault host's link (nothing else can reach that)
	redis-server --bind 127.0.0.1 ${BENCH_LISTEN_EXTRA:+$BENCH_LISTEN_EXTRA --protected-mode no} --port "$port" --save '' --appendonly no \
		--dir "$dir" --logfile "$dir/redis.log" &
	BENCH_PIDS+=($!)
	BENCH_REDIS_PID=$!
	BENCH_REDIS="127.0.0.1:$port"
	bench_wait redis 100 redis-cli -h 127.0.0.1 -p "$port" ping
}

# ZooKeeper 3.8 (Debian zookeeper) standalone, its defaults but the tick
# and the limit of 60 connections from one address (the many-leases figure
# opens 100 sessions from 127.0.0.1).
bench_zk_start()
{
	local dir=$1 port addr=${BENCH_LISTEN_EXTRA:-127.0.0.1}
	[ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null || return 1
	port=$(pg_free_port) || return 1
	mkdir -p "$dir/zk/data"
	cat >"$dir/zk/zoo.cfg" <<CFG
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$dir/zk/data
clientPortAddress=$addr
clientPort=$port
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,mntr
maxClientCnxns=0
CFG
	java -Xmx1g -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zk/zoo.cfg" >"$dir/zk.log" 2>&1 &
	BENCH_PIDS+=($!)
	BENCH_ZK_PID=$!
	BENCH_ZK="$addr:$port"
	bench_wait zookeeper 300 bench_zk_ok "$port" "$addr"
}

bench_zk_ok() { [ "$(exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1" && echo ruok >&3 && timeout 2 cat <&3)" = imok ]; }

bench_servers_stop()
{
	local pid
	for pid in "${BENCH_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${BENCH_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	BENCH_PIDS=()
}
