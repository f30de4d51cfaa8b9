#!/usr/bin/env bash
# pg_lease's goal ratios from a program built against an installed pglease
# (find_package): lease::renew() against a bare UPDATE CAS, the
# lease.acquire() + lease.release() cycle against two plain UPDATEs, and
# run_fenced against a plain pqxx::work, each side by side with its baseline
# in the same rounds (bench/installed/installed_ratios.cpp).  One throwaway
# PostgreSQL with default durability (fsync on, synchronous_commit on) and
# shared_preload_libraries = 'pg_lease', with a follower LISTENing on
# pg_lease for the whole run; at the end the follower must have received
# one notification per lease_events row.  Installs the client into a
# private prefix only: the extension must already be installed on the
# system.  Exits non-zero when a check fails (a renewal, acquire or release
# that did not succeed, a notification missing).
#
#   bench/installed/installed_ratios.sh [BUILD_DIR] [-- installed_ratios options]
#       BUILD_DIR: a configured tree of this repository (default: build);
#       the script builds the library targets the install needs
#   bench/installed/installed_ratios.sh build -- --clients 1,4,16 --rounds 5 --seconds 1
#   PGLEASE_LIBPQXX=7.10.7 bench/installed/installed_ratios.sh build/platforms/7.10.7 -- ...
#       the same against another libpqxx: a platform build, optimized
#       (PGLEASE_PLATFORM_BUILD_TYPE=RelWithDebInfo tests/platforms/build.sh),
#       its toolchain and libpqxx prefix
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
[ $# -gt 0 ] && shift
[ "${1:-}" = -- ] && shift
case "$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")" in
Release | RelWithDebInfo) ;;
*) echo "$build is not an optimized build (CMAKE_BUILD_TYPE Release or RelWithDebInfo)" >&2; exit 1 ;;
esac
# What `cmake --install --component development` installs: both libraries
# (a no-op when they are up to date).
cmake --build "$build" --target pglease_client pglease_testing >/dev/null
work=$(mktemp -d /tmp/pglease_installed_ratios.XXXXXX)
chmod 0755 "$work"
# Only the library's component: the extension's install rules name the
# system's PostgreSQL directories, which --prefix does not move.
cmake --install "$build" --prefix "$work/prefix" --component development >/dev/null
toolchain=()
prefix_path=$work/prefix
if [ -n "${PGLEASE_LIBPQXX:-}" ]; then
	source cmake/libpqxx-toolchain.sh
	pqxx_toolchain "$PGLEASE_LIBPQXX"
	prefix_path="$prefix_path;$(scripts/libpqxx.sh "$PGLEASE_LIBPQXX")"
	toolchain=(-DCMAKE_CXX_COMPILER="$PQXX_CXX" -DCMAKE_CXX_FLAGS="$PQXX_CXXFLAGS"
		-DCMAKE_EXE_LINKER_FLAGS="$PQXX_LDFLAGS" -DCMAKE_CXX_STANDARD="$PQXX_STD")
fi
cmake -S bench/installed -B "$work/consumer" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_PREFIX_PATH="$prefix_path" "${toolchain[@]}" >/dev/null
cmake --build "$work/consumer" >/dev/null
grep -q "$(pwd)/client" "$work/consumer/CMakeCache.txt" &&
	{ echo "the consumer build sees the source tree" >&2; exit 1; }

export PG_CLUSTER_ROOT=$work/pg
mkdir -p "$PG_CLUSTER_ROOT"
source tests/harness/pg_cluster.sh
source bench/pgbench/follower.sh
follower=
stop_all()
{
	[ -n "$follower" ] && { touch "$work/follower.stop"; wait "$follower" 2>/dev/null || true; }
	pg_cluster_stop_all
	rm -rf "$work"
}
trap stop_all EXIT
pg_cluster_init installed
pg_as_owner tee -a "$(pg_cluster_dir installed)/data/postgresql.conf" >/dev/null <<CONF
fsync = on
synchronous_commit = on
max_connections = 100
shared_preload_libraries = 'pg_lease'
CONF
pg_cluster_start installed
psql -X -q -c "CREATE EXTENSION pg_lease"

# The follower: LISTEN pg_lease for the whole run.
follower_start installed

echo "installed_ratios: $(nproc) cores; libpqxx $(ldd "$work/consumer/installed_ratios" | grep -o 'libpqxx-[0-9.]*\.so' | head -1); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/consumer/installed_ratios" "$@"
echo "installed_ratios: load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Every lease change reached the follower: one notification per event (the
# worker may still be sending, so wait for them, at most 60 s).
events=$(psql -X -A -t -c "SELECT count(*) FROM lease_events")
got=$(follower_stop installed "$events")
echo "installed_ratios: the follower received $got lease notifications; lease_events has $events"
[ "$got" -eq "$events" ] || { echo "installed_ratios: NOTIFICATIONS MISSING OR EXTRA" >&2; exit 1; }
