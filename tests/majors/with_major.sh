#!/usr/bin/env bash
# Runs a suite against another PostgreSQL major: PG_BIN (the server that
# tests/harness/pg_cluster.sh starts) set to that major's bin folder from
# scripts/pg-major.sh (fetched once, cached outside the repository).
#
#   tests/majors/with_major.sh N COMMAND ARGS...                # pg_lease built and installed in N's tree
#   tests/majors/with_major.sh --server-only N COMMAND ARGS...  # the server alone (13 to 18)
#
# --server-only is what the SQL edition's suites use: no headers, no build,
# no pg_lease library (14 and 16 have no Debian headers to build with), and
# nothing of N's build tree is touched, so they run beside N's C suites;
# PG_SERVER_ONLY=1 tells a suite not to count on a library in PG_BIN's tree.
set -euo pipefail
mode=()
if [ "${1:-}" = --server-only ]; then
	mode=(--server-only)
	shift
fi
major=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
PG_BIN=$("$root/scripts/pg-major.sh" "$major" "${mode[@]}")
export PG_BIN
[ -z "${mode[*]}" ] || export PG_SERVER_ONLY=1
echo "== $("$PG_BIN/postgres" --version)${mode:+ (server only)}: $*"
exec "$@"
