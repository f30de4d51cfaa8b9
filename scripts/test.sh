#!/usr/bin/env bash
# The test command.  On a fresh Debian 12 machine: installs the packages it
# lacks, builds everything from scratch with warnings as errors, installs
# the extension, starts a throwaway PostgreSQL on a free loopback port, runs
# every suite through CTest, and stops the server whatever happens.  The
# suites run side by side, nproc + 1 at a time (PGLEASE_TEST_JOBS=N to
# choose; 1 runs them one by one): cmake/test_schedule.cmake says which
# must not share the server, the cores or a major's tree.  The
# suites of PostgreSQL 13, 17 and 18 (tests/majors) fetch those majors once
# through scripts/pg-major.sh, cached in /var/cache/pglease/majors.
#
#   scripts/test.sh                 # everything
#   scripts/test.sh -L extension    # only the extension's suites (ctest args)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/deps.sh

sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
build=${PGLEASE_BUILD_DIR:-$root/build}
rm -rf "$build"
make -s -f Makefile.pgxs clean >/dev/null
cmake -S . -B "$build" -DPGLEASE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"
"${sudo[@]}" make -s -f Makefile.pgxs install >/dev/null

source tests/harness/pg_cluster.sh
pg_cluster_start main
psql -X -q -c "CREATE EXTENSION pg_lease"
echo "test server: PGHOST=$PGHOST PGPORT=$PGPORT"

status=0
jobs=${PGLEASE_TEST_JOBS:-$(($(nproc) + 1))}
ctest --test-dir "$build" --output-on-failure --timeout 600 -j "$jobs" "$@" || status=$?
if [ $status -ne 0 ]; then
	[ -f regress/regression.diffs ] && head -200 regress/regression.diffs
	echo "== why each failed test failed (from $build/Testing/Temporary/LastTest.log)"
	scripts/lib/failure_digest.sh "$build" || true
fi
exit $status
