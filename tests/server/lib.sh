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

finish()
{
	echo "$TESTS_PASSED passed, $TESTS_FAILED failed"
	[ "$TESTS_FAILED" -eq 0 ]
}
