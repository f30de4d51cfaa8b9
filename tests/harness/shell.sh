# Helpers every shell test shares (sourced by tests/cli/lib.sh and the
# network tests). A test may define on_fail to print what it kept (logs of
# the processes it ran) before fail exits.

fail() { echo "FAIL: $*" >&2; if declare -F on_fail >/dev/null; then on_fail; fi; exit 1; }
pass() { echo "ok: $*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# One value from SQL.
sql() { psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"; }

# wait_until SECONDS COMMAND...: retries COMMAND every WAIT_STEP seconds
# (default 0.05) until it succeeds; returns 1 once SECONDS have passed.
wait_until()
{
	local deadline=$(($(date +%s%N) + $1 * 1000000000))
	shift
	until "$@"; do
		[ "$(date +%s%N)" -lt "$deadline" ] || return 1
		sleep "${WAIT_STEP:-0.05}"
	done
}

# expect_rc WANT COMMAND...: runs COMMAND, fails the test unless it exits WANT.
expect_rc()
{
	local want=$1 rc=0
	shift
	"$@" || rc=$?
	[ "$rc" -eq "$want" ] || fail "expected exit $want, got $rc from: $*"
}

# wait_pid PID SECONDS: waits for background PID (a child of this shell) and
# sets RC to its status; fails the test if it is still running after SECONDS.
wait_pid()
{
	local pid=$1
	wait_until "$2" bash -c "! kill -0 $pid 2>/dev/null || [ \"\$(ps -o stat= -p $pid)\" = Z ]" ||
		fail "process $pid still running after $2 s"
	RC=0
	wait "$pid" || RC=$?
}
