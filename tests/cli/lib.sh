# Shared helpers of the pglease command tests. Sourced by test_*.sh, which
# CTest runs with PGLEASE=<path of the built binary> and the PG* variables of
# a server with `CREATE EXTENSION pg_lease` (scripts/test.sh provides one).
set -euo pipefail

: "${PGLEASE:?PGLEASE must name the pglease binary}"
: "${PGPORT:?PG* variables must name a running server with pg_lease}"
psql -X -q -A -t -c "SELECT 1 FROM pg_extension WHERE extname IN ('pg_lease', 'pg_lease_sql')
	UNION ALL SELECT 1 WHERE to_regclass('lease_sql_settings') IS NOT NULL" | grep -q 1 ||
	{ echo "FAIL: no pg_lease extension on the server of PGHOST=${PGHOST:-} PGPORT=$PGPORT" >&2; exit 1; }

# install_edition DB: pg_lease in another database, in the edition this
# run tests (PGLEASE_SQL_EDITION: the SQL edition's psql script, else the
# C extension).
install_edition()
{
	if [ -n "${PGLEASE_SQL_EDITION:-}" ]; then
		psql -X -q -v ON_ERROR_STOP=1 -d "$1" -f "$PGLEASE_SQL_EDITION" >/dev/null
	else
		psql -X -q -v ON_ERROR_STOP=1 -d "$1" -c "CREATE EXTENSION pg_lease" >/dev/null
	fi
}

TMP=$(mktemp -d /tmp/pglease_cli_test.XXXXXX)
chmod 0777 "$TMP"
BG_PIDS=()

# Every process this test starts carries its tag in its environment. The
# suites run side by side and pids wrap (pid_max 32768 here): a pid or
# group recorded here may belong to another suite's process by cleanup
# time (once, a SIGCONT meant for an exited job woke another suite's
# stopped backend). Only tagged processes are signalled.
export PGLEASE_CLI_TEST_TAG="$$.$(date +%s%N).$RANDOM"
tagged() { tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" | grep -qx "PGLEASE_CLI_TEST_TAG=$PGLEASE_CLI_TEST_TAG"; }

cleanup()
{
	local pid f member
	for pid in "${BG_PIDS[@]}"; do
		tagged "$pid" || continue
		kill -CONT "$pid" 2>/dev/null || true
		kill -KILL "$pid" 2>/dev/null || true
	done
	for f in "$TMP"/*.pgid; do
		[ -f "$f" ] || continue
		for member in $(pgrep -g "$(cat "$f")" 2>/dev/null); do
			tagged "$member" || continue
			kill -CONT "$member" 2>/dev/null || true
			kill -KILL "$member" 2>/dev/null || true
		done
	done
	rm -rf "$TMP"
}
trap cleanup EXIT

# fail, pass, now_ms, sql, wait_until, expect_rc, wait_pid
source "$(dirname "${BASH_SOURCE[0]}")/../harness/shell.sh"

# A lease or table name no other test (or run) uses.
unique() { echo "cli_${1}_$$_${RANDOM}"; }

# group_gone PGID: no process left in the group.
group_gone() { ! kill -0 -"$1" 2>/dev/null; }

lease_holder() { sql "SELECT coalesce(holder, '') FROM leases WHERE name = '$1'"; }
lease_epoch() { sql "SELECT epoch FROM leases WHERE name = '$1'"; }
lease_valid() { [ "$(sql "SELECT coalesce(valid, false) FROM lease_status WHERE name = '$1'")" = t ]; }
