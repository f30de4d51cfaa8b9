# pg_free_port: a loopback TCP port that nothing listens on.  Sourced by
# the cluster harness and by the benchmarks' etcd/Redis starter; it defines
# only these functions (no traps).
#
# Ports come from 10000 up to the kernel's ephemeral range
# (ip_local_port_range): a port in that range can be taken at any moment as
# the local end of some outbound connection, which no probe sees (a Patroni
# node once failed to bind one while another suite ran).
# Suites run side by side (ctest -j): between the probe and the bind,
# another suite could pick the same port. Each port handed out is claimed
# first, as a directory in PG_PORT_CLAIMS (mkdir is atomic), and is not
# handed out again for an hour (tests/fault/common.cpp claims the same way).
PG_PORT_CLAIMS=${PG_PORT_CLAIMS:-/tmp/pglease-ports}

pg_port_claim()
{
	local claim=$PG_PORT_CLAIMS/$1
	mkdir -p "$PG_PORT_CLAIMS" 2>/dev/null
	mkdir "$claim" 2>/dev/null && return 0
	# a claim older than an hour is an earlier run's
	[ -n "$(find "$claim" -maxdepth 0 -mmin +60 2>/dev/null)" ] || return 1
	rmdir "$claim" 2>/dev/null
	mkdir "$claim" 2>/dev/null
}

pg_free_port()
{
	local port low=32768 span
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	[ "$low" -gt 11000 ] || low=32768
	span=$((low - 10000))
	for _ in $(seq 1 200); do
		port=$((10000 + (RANDOM * 32768 + RANDOM) % span))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && pg_port_claim "$port"; then
			echo "$port"
			return 0
		fi
	done
	echo "pg_free_port: no free port found" >&2
	return 1
}
