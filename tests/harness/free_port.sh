# pg_free_port: a loopback TCP port that nothing listens on.  Sourced by
# the cluster harness and by the benchmarks' etcd/Redis starter; it defines
# only this function (no traps).
pg_free_port()
{
	local port
	for _ in $(seq 1 200); do
		port=$((20000 + RANDOM % 30000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	echo "pg_free_port: no free port found" >&2
	return 1
}
