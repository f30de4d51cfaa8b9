#!/usr/bin/env bash
# The installed package of a platform build: `cmake --install` into a
# prefix of its own, then a program outside the source tree
# (consumer/consumer.cpp) built with find_package(pglease) against that
# prefix and the libpqxx it requires, with the same toolchain, run against
# the server of the PG* variables: it leads, writes through run_fenced and
# is refused when stale.
#
#   tests/platforms/consumer.sh VERSION BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
version=$1
build=$(cd "$2" && pwd)
source "$root/tests/server/lib.sh"
source "$root/cmake/libpqxx-toolchain.sh"
pqxx_toolchain "$version"
pqxx_prefix=$("$root/scripts/libpqxx.sh" "$version")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" --component development >"$work/install.log"
check "the package's pkg-config file requires libpqxx $version's line" \
	grep -qE "^Requires: .*libpqxx >= ${version%.*}" "$work/prefix/lib/pkgconfig/pglease.pc"
check "the package's CMake config requires the same libpqxx" \
	grep -q "libpqxx" "$work/prefix/lib/cmake/pglease/pgleaseConfig.cmake"

check "find_package(pglease) from the installed prefix builds a program (libpqxx $version)" \
	bash -c "CC=$PQXX_CC CXX=$PQXX_CXX CXXFLAGS='$PQXX_CXXFLAGS' cmake -S '$here/consumer' -B '$work/build' \
		-DCMAKE_CXX_STANDARD=$PQXX_STD -DCMAKE_EXE_LINKER_FLAGS='$PQXX_LDFLAGS' \
		-DCMAKE_PREFIX_PATH='$work/prefix;$pqxx_prefix' >'$work/consumer.log' 2>&1 &&
		cmake --build '$work/build' >>'$work/consumer.log' 2>&1" ||
	cat "$work/consumer.log" >&2
cat >"$work/pc.cpp" <<'CPP'
#include <pglease/pglease.hpp>
#include <iostream>
int main() { std::cout << pglease::default_identity() << "\n"; }
CPP
check "pkg-config --cflags --libs pglease builds and runs a program (libpqxx $version)" \
	bash -c "PKG_CONFIG_PATH='$work/prefix/lib/pkgconfig:$pqxx_prefix/lib/pkgconfig' &&
		export PKG_CONFIG_PATH && $PQXX_CXX -std=c++$PQXX_STD $PQXX_CXXFLAGS '$work/pc.cpp' -o '$work/pc' \
		\$(pkg-config --cflags --libs pglease) -Wl,-rpath,'$pqxx_prefix/lib' $PQXX_LDFLAGS && '$work/pc' >/dev/null"
grep -q "$root/client" "$work/build/CMakeCache.txt" 2>/dev/null &&
	check "the consumer build does not see the source tree" false

lease="platform_consumer_${version//./_}_$$"
table="${lease}_t"
q "CREATE TABLE $table (id bigserial PRIMARY KEY, note text, epoch bigint)" >/dev/null
q "SELECT lease_fence('$table', '$lease')" >/dev/null
out=$("$work/build/consumer" "$lease" "$table" 2>&1) || true
echo "$out"
check "the consumer led and wrote through run_fenced" grep -q "wrote as leader" <<<"$out"
check "the consumer's stale token was refused" grep -q "refused when stale (LS00" <<<"$out"
check "only the leader's and the new holder's rows committed" \
	test "$(q "SELECT string_agg(note, ',' ORDER BY id) FROM $table")" = "leader,new"
check "the consumer runs on libpqxx $version" \
	bash -c "ldd '$work/build/consumer' | grep -q '$pqxx_prefix/lib/libpqxx'"
q "SELECT lease_unfence('$table')" >/dev/null
q "DROP TABLE $table" >/dev/null
finish
