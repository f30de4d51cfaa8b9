#!/usr/bin/env bash
# Builds the client library, the `pglease` command and their suites against
# another libpqxx (built once per machine by scripts/libpqxx.sh), with the
# compiler and standard library that version needs (cmake/libpqxx-toolchain.sh),
# warnings as errors. The suites then run through tests/platforms/suites.sh.
#
#   tests/platforms/build.sh VERSION BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
version=$1 build=$2

prefix=$("$root/scripts/libpqxx.sh" "$version")
source "$root/cmake/libpqxx-toolchain.sh"
pqxx_toolchain "$version"
extra=()
if [ "$PQXX_STDLIB" = libc++ ]; then
	# Debian's libgtest is built for libstdc++: GoogleTest from its sources.
	# Its prometheus-cpp too, and there are no sources of it here: the
	# command is compiled, not linked (client/cli/CMakeLists.txt).
	extra+=(-DPGLEASE_GTEST_FROM_SOURCE=ON -DPGLEASE_CLI_LINK=OFF)
fi
# Unoptimized and without debug information by default (a third less
# time): these builds check that the code compiles warning-free and that
# its suites pass on that libpqxx; the optimized build is the main one.
# Benchmarks (bench/installed/installed_ratios.sh) need PGLEASE_PLATFORM_BUILD_TYPE=RelWithDebInfo.
build_type=${PGLEASE_PLATFORM_BUILD_TYPE:-None}
start=$SECONDS
rm -rf "$build"
mkdir -p "$build"
# The standard library's flags go to C++ and its links only (the C
# compiler's checks must not see -stdlib).
CC=$PQXX_CC CXX=$PQXX_CXX CXXFLAGS=$PQXX_CXXFLAGS \
	cmake -S "$root" -B "$build" -DPGLEASE_CLIENT_ONLY=ON -DPGLEASE_WERROR=ON \
	-DCMAKE_EXE_LINKER_FLAGS="$PQXX_LDFLAGS" -DCMAKE_SHARED_LINKER_FLAGS="$PQXX_LDFLAGS" \
	-DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_CXX_STANDARD="$PQXX_STD" \
	-DPGLEASE_LIBPQXX_PREFIX="$prefix" "${extra[@]}" >"$build/configure.log" 2>&1 ||
	{ cat "$build/configure.log" >&2; exit 1; }
# Niced: the suites that run beside it time their calls, and a build at
# the same priority starved one (sql_edition.client.13 missed a 300 ms
# grant beside libpqxx 8's build); it takes what they leave.
nice -n 10 cmake --build "$build" -j "$(nproc)"
echo "platforms: libpqxx $version ($PQXX_CXX, $PQXX_STDLIB, C++$PQXX_STD, $build_type) built in $((SECONDS - start)) s"
