#!/usr/bin/env bash
# Installs the Debian 12 packages pg_lease needs, only those missing, through
# scripts/apt-install.sh (which waits for another apt process's locks).
# Runs as root, or through sudo.
#
#   scripts/deps.sh demo     # the demo: PostgreSQL 15, build tools, libpqxx
#   scripts/deps.sh test     # (default) everything the test suites use
#   scripts/deps.sh bench    # test, plus the benchmarks' etcd/Redis clients (bench/peers' are in test: its smoke runs there)
set -euo pipefail

demo=(
	build-essential cmake pkg-config
	postgresql-15 postgresql-server-dev-15
	libpq-dev libpqxx-dev libcli11-dev nlohmann-json3-dev libcpp-httplib-dev prometheus-cpp-dev
)
test=(
	"${demo[@]}" clang postgresql-contrib
	# tests/platforms: libpqxx 8 (C++20, <format>) builds with clang-16 and libc++-16
	clang-16 libc++-16-dev libc++abi-16-dev
	googletest libgtest-dev libgmock-dev libbenchmark-dev libclang-rt-14-dev libfmt-dev
	libfaketime pgbouncer procps iproute2 nftables python3
	etcd-server etcd-client redis-server redis-tools
	# bench/peers (bench.peers_smoke): etcd's own Go client, Curator on
	# ZooKeeper, each writing to PostgreSQL; built offline from these
	golang-go golang-etcd-server-dev golang-github-lib-pq-dev golang-github-gomodule-redigo-dev
	default-jdk-headless zookeeper libcurator-framework-java libcurator-recipes-java libpostgresql-jdbc-java
)
bench=("${test[@]}" libhiredis-dev libcurl4-openssl-dev)

case ${1:-test} in
demo) packages=("${demo[@]}") ;;
test) packages=("${test[@]}") ;;
bench) packages=("${bench[@]}") ;;
*)
	echo "deps.sh: unknown profile '$1' (demo, test, bench)" >&2
	exit 2
	;;
esac

exec "$(dirname "$0")/apt-install.sh" "${packages[@]}"
