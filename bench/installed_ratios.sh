#!/usr/bin/env bash
# run_fenced against a plain pqxx::work, from a program built against an
# installed pglease (find_package), on a throwaway PostgreSQL with default
# durability (fsync on). Installs the client into a private prefix only:
# the extension must already be installed on the system.
#
#   bench/installed_ratios.sh [BUILD_DIR] [-- installed_ratios options]
#       BUILD_DIR: a configured and built tree of this repository (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ $# -gt 0 ] && shift
[ "${1:-}" = -- ] && shift
work=$(mktemp -d /tmp/pglease_installed_ratios.XXXXXX)
chmod 0755 "$work"
# Only the library's component: the extension's install rules name the
# system's PostgreSQL directories, which --prefix does not move.
cmake --install "$build" --prefix "$work/prefix" --component development >/dev/null
cmake -S bench/installed -B "$work/consumer" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
grep -q "$(pwd)/client" "$work/consumer/CMakeCache.txt" &&
	{ echo "the consumer build sees the source tree" >&2; exit 1; }

export PG_TEST_FSYNC=${PG_TEST_FSYNC:-on} # the harness default is off: not for benchmarks
export PG_CLUSTER_ROOT=$work/pg
mkdir -p "$PG_CLUSTER_ROOT"
source tests/harness/pg_cluster.sh
trap 'pg_cluster_stop_all; rm -rf "$work"' EXIT
pg_cluster_start installed
psql -X -q -c "CREATE EXTENSION pg_lease"
echo "installed_ratios: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/consumer/installed_ratios" "$@"
echo "installed_ratios: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
