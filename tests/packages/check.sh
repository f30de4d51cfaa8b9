#!/usr/bin/env bash
# The Debian packages: cpack builds them from BUILD_DIR, apt installs them on
# this machine (root), and a program outside the source tree is built
# against the installed files only (CMake package and pkg-config), then run
# against a server whose extension comes from the package.
#
#   tests/packages/check.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/../server/lib.sh"

work=$PG_CLUSTER_ROOT
sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)

# --- build and install the packages ------------------------------------------
(cd "$build" && cpack -G DEB -B "$work/debs" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
debs=("$work"/debs/*.deb)
names=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done | sort | tr '\n' ' ')
check "cpack built the three packages ($names)" test "$names" = "libpglease-dev pglease postgresql-15-pg-lease "
depends=$(dpkg-deb -f "$work"/debs/libpglease-dev_*.deb Depends)
check "libpglease-dev depends on the libpqxx line it was built with ($depends)" \
	grep -qE "libpqxx-dev \(>= $(pkg-config --modversion libpqxx)\), libpqxx-dev \(<< [0-9]+\.[0-9]+\)" <<<"$depends"
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq --reinstall --no-install-recommends \
	"${debs[@]}" >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; exit 1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for p in libpglease-dev pglease postgresql-15-pg-lease; do
	check "$p is installed" installed "$p"
done
check "the extension is where PostgreSQL looks" \
	test -f "$(pg_config --pkglibdir)/pg_lease.so" -a -f "$(pg_config --sharedir)/extension/pg_lease--1.4--1.5.sql"
check "headers, CMake package and pkg-config file are installed" \
	test -f /usr/include/pglease/pglease.hpp -a -f /usr/lib/cmake/pglease/pgleaseConfig.cmake -a -f /usr/lib/pkgconfig/pglease.pc
check "the command is on PATH" test "$(command -v pglease)" = /usr/bin/pglease

# --- a consumer built against the installed files only -----------------------
consumer=$work/consumer
mkdir -p "$consumer"
cp "$src/examples/leader_worker.cpp" "$consumer/"
cat >"$consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(consumer LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(pglease 1.3 REQUIRED)
add_executable(leader_worker leader_worker.cpp)
target_link_libraries(leader_worker PRIVATE pglease::client)
CMAKE
check "find_package(pglease) from the installed package, build" \
	bash -c "cmake -S '$consumer' -B '$consumer/build' >'$work/consumer.log' 2>&1 && cmake --build '$consumer/build' >>'$work/consumer.log' 2>&1"
grep -q "$src" "$consumer/build/CMakeCache.txt" && check "the consumer build does not see the source tree" false
cat >"$consumer/pc.cpp" <<'CPP'
#include <pglease/pglease.hpp>
#include <iostream>
int main() { std::cout << pglease::default_identity() << "\n"; }
CPP
check "pkg-config --cflags --libs pglease builds a program" \
	bash -c "g++ -std=c++17 '$consumer/pc.cpp' -o '$consumer/pc' \$(pkg-config --cflags --libs pglease) && '$consumer/pc' >/dev/null"

# the user's unit test on the test double, against the installed package too
mkdir -p "$consumer/testing"
cp "$src/examples/testing/report_scheduler.hpp" "$src/examples/testing/report_scheduler_test.cpp" "$consumer/testing/"
cat >"$consumer/testing/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(consumer_testing LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(pglease 1.3 REQUIRED)
find_package(GTest REQUIRED)
add_executable(scheduler_test report_scheduler_test.cpp)
target_link_libraries(scheduler_test PRIVATE pglease::testing GTest::gtest GTest::gtest_main)
CMAKE
check "pglease::testing from the installed package: the example unit test builds and passes" \
	bash -c "cmake -S '$consumer/testing' -B '$consumer/testing/build' >>'$work/consumer.log' 2>&1 &&
		cmake --build '$consumer/testing/build' >>'$work/consumer.log' 2>&1 &&
		'$consumer/testing/build/scheduler_test' >>'$work/consumer.log' 2>&1"

# --- run it against a server with the packaged extension ---------------------
pg_cluster_start packages
q "CREATE EXTENSION pg_lease" >/dev/null
check "the packaged extension is version 1.5" test "$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.5
q "CREATE TABLE ticks (id bigserial PRIMARY KEY, epoch bigint, at timestamptz DEFAULT now())" >/dev/null
q "SELECT lease_fence('ticks', 'ticker')" >/dev/null
"$consumer/build/leader_worker" ticker >"$work/worker.log" 2>&1 &
worker=$!
for _ in $(seq 1 100); do
	[ "$(q "SELECT count(*) FROM ticks")" -ge 2 ] && break
	sleep 0.1
done
kill -TERM "$worker"
wait "$worker" || true
check "the consumer led and wrote fenced rows" test "$(q "SELECT count(*) FROM ticks")" -ge 2
check "every row carries the epoch of the consumer's grant" \
	test "$(q "SELECT count(*) FROM ticks t WHERE NOT EXISTS (SELECT FROM lease_events e WHERE e.name = 'ticker' AND e.epoch = t.epoch AND e.event = 'acquired')")" = 0
check "it released the lease when stopped" test "$(q "SELECT holder IS NULL FROM leases WHERE name = 'ticker'")" = t
out=$(/usr/bin/pglease run --lease ticker --ttl 5s --no-wait -- sh -c 'psql -X -q -c "INSERT INTO ticks (epoch) VALUES ($PGLEASE_EPOCH)" && echo wrote' 2>&1)
check "the installed pglease runs a fenced job" grep -q wrote <<<"$out"

finish
