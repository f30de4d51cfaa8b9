#!/usr/bin/env bash
# The extension's suites on another PostgreSQL major (issue 34), against a
# throwaway cluster of that major from scripts/pg-major.sh:
#   1. the pg_regress and isolation suites (PGXS installcheck; alternative
#      expected files, NAME_1.out, only where that major's own behaviour
#      differs: docs/operations.md, "PostgreSQL majors");
#   2. the same pg_regress suite with pg_lease in shared_preload_libraries;
#   3. the notifier worker (tests/server/notifier.sh);
#   4. the upgrade path 1.0 -> current (tests/server/upgrade.sh);
#   5. the C++ client's integration suite.
#
#   tests/majors/suites.sh N INTEGRATION_TESTS   # the client's GoogleTest binary
set -euo pipefail
major=$1
integration=$(realpath "$2")
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

start=$(date +%s)
step() { echo "== PostgreSQL $major: $* ($(($(date +%s) - start)) s)"; }

step "server, headers and pg_lease (scripts/pg-major.sh)"
bin=$(scripts/pg-major.sh "$major")
cache=$(cd "$bin/../.." && pwd)
export PG_BIN=$bin
version=$("$bin/postgres" --version)
step "$version"

installcheck() {
	make -s -C "$cache/build" -f Makefile.pgxs PG_CONFIG="$cache/pg_config" "$@" ||
		{
			cat "$cache"/build/regress/regression.diffs \
				"$cache"/build/regress/output_iso/regression.diffs 2>/dev/null | head -200
			return 1
		}
}

(
	source tests/harness/pg_cluster.sh
	pg_cluster_start "pg$major"
	step "pg_regress and isolation"
	installcheck installcheck
)
(
	export PG_TEST_PRELOAD=1
	source tests/harness/pg_cluster.sh
	pg_cluster_start "pg$major-preload"
	step "pg_regress with shared_preload_libraries = 'pg_lease'"
	psql -X -q -At -c "SHOW shared_preload_libraries" | grep -qx pg_lease
	installcheck installcheck ISOLATION=
)
step "the notifier worker and a handover's own NOTIFY"
bash tests/server/notifier.sh
step "upgrade path"
bash tests/server/upgrade.sh
(
	source tests/harness/pg_cluster.sh
	pg_cluster_start "pg$major-client"
	psql -X -q -c "CREATE EXTENSION pg_lease"
	step "C++ client integration suite"
	"$integration" --gtest_brief=1
)
step "SQL edition (no C), installed by a database owner"
bash tests/server/sql_edition.sh
step "done"
