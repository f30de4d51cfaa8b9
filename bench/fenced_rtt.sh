#!/usr/bin/env bash
# run_fenced against a plain pqxx::work, from a program built against an
# installed pglease (find_package), on a throwaway PostgreSQL with default
# durability (fsync on). Installs the client into a private prefix only:
# the extension must already be installed on the system.
#
#   bench/fenced_rtt.sh [BUILD_DIR] [-- fenced_rtt options]
#       BUILD_DIR: a configured and built tree of this repository (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ $# -gt 0 ] && shift
[ "${1:-}" = -- ] && shift
work=$(mktemp -d /tmp/pglease_fenced_rtt.XXXXXX)
chmod 0755 "$work"
# Only the library's component: the extension's install rules name the
# system's PostgreSQL directories, which --prefix does not move.
cmake --install "$build" --prefix "$work/prefix" --component development >/dev/null
cmake -S bench/fenced_rtt -B "$work/consumer" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
grep -q "$(pwd)/client" "$work/consumer/CMakeCache.txt" &&
	{ echo "the consumer build sees the source tree" >&2; exit 1; }

export PG_TEST_FSYNC=${PG_TEST_FSYNC:-on} # the harness default is off: not for benchmarks
export PG_CLUSTER_ROOT=$work/pg
mkdir -p "$PG_CLUSTER_ROOT"
source tests/harness/pg_cluster.sh
trap 'pg_cluster_stop_all; rm -rf "$work"' EXIT
pg_cluster_start fenced_rtt
psql -X -q -c "CREATE EXTENSION pg_lease"
echo "fenced_rtt: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/consumer/fenced_rtt" "$@"
echo "fenced_rtt: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
