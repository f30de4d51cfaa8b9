#!/usr/bin/env bash
# Runs the client's unit and integration suites and the command's suites
# of a build made by tests/platforms/build.sh, against the server of the
# PG* variables (with CREATE EXTENSION pg_lease), as the main build's run.
# The SQL edition's and the other majors' suites are left to the main
# build: they exercise the server, not libpqxx.
#
#   tests/platforms/suites.sh BUILD_DIR [ctest args...]
set -euo pipefail
build=$1
shift
[ -f "$build/CTestTestfile.cmake" ] || { echo "platforms: no build in $build (tests/platforms/build.sh)" >&2; exit 1; }
exec ctest --test-dir "$build" --output-on-failure --timeout 600 \
	-L '^(client|cli)$' -LE 'sql_edition' -E '^(cli\.demo|net\.demo_partition)$' "$@"
