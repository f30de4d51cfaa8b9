# Shared by the server-level shell tests: assertions that count, and psql.

TESTS_PASSED=0
TESTS_FAILED=0

# check DESCRIPTION COMMAND...: runs COMMAND, counts it, prints TAP-like lines.
check()
{
	local description=$1
	shift
	if "$@"; then
		TESTS_PASSED=$((TESTS_PASSED + 1))
		echo "ok - $description"
	else
		TESTS_FAILED=$((TESTS_FAILED + 1))
		echo "not ok - $description"
	fi
}

# q SQL: one value from the cluster the PG* variables point at.
q()
{
	psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"
}

# idle_in_transaction_pid FILE: the backend pid a stalled session wrote
# into FILE, once that backend is idle in its transaction (read as the
# superuser postgres; up to 10 s, then the pid as it is: the caller's next
# check reports a session that never got there).
idle_in_transaction_pid()
{
	local pid=""
	for _ in $(seq 100); do
		[ -s "$1" ] && pid=$(head -1 "$1") &&
			[ "$(PGUSER=postgres q "SELECT state FROM pg_stat_activity WHERE pid = $pid")" = "idle in transaction" ] && break
		sleep 0.1
	done
	echo "$pid"
}

finish()
{
	echo "$TESTS_PASSED passed, $TESTS_FAILED failed"
	[ "$TESTS_FAILED" -eq 0 ]
}

# sql_edition_cluster NAME: a cluster NAME with no pg_lease library, roles
# app_owner (the database owner, no superuser) and app_user, database app,
# and the SQL edition's psql script in $PG_CLUSTER_ROOT/pg_lease_sql.sql
# (from its make target), not yet installed. Needs
# tests/harness/pg_cluster.sh sourced.
sql_edition_cluster()
{
	pg_cluster_start "$1"
	q "CREATE ROLE app_owner LOGIN" >/dev/null
	q "CREATE ROLE app_user LOGIN" >/dev/null
	q "CREATE DATABASE app OWNER app_owner" >/dev/null
	source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/sql_edition.sh"
	sql_edition_psql_script "$PG_CLUSTER_ROOT/pg_lease_sql.sql"
}

# sql_edition_install: app_owner installs that script into app with psql -f
# (a check), and the PG* variables name app and app_owner from then on.
sql_edition_install()
{
	export PGDATABASE=app PGUSER=app_owner
	check "the database owner (no superuser) installs the SQL edition with psql -f" \
		psql -X -q -v ON_ERROR_STOP=1 -f "$PG_CLUSTER_ROOT/pg_lease_sql.sql"
}
