#!/usr/bin/env bash
# Runs a suite against another PostgreSQL major: PG_BIN (the server that
# tests/harness/pg_cluster.sh starts) set to that major's bin folder from
# scripts/pg-major.sh (fetched once, cached outside the repository).
#
#   tests/majors/with_major.sh N COMMAND ARGS...
set -euo pipefail
major=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
PG_BIN=$("$root/scripts/pg-major.sh" "$major")
export PG_BIN
echo "== $("$PG_BIN/postgres" --version): $*"
exec "$@"
