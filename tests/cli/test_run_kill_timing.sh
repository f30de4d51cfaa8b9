#!/usr/bin/env bash
# pglease run stops its job a grace period (--kill-after) BEFORE the lease's
# local deadline, not at it. The renewals are stopped deterministically:
# pglease connects as a role of its own, which is then made NOLOGIN and its
# session terminated, so every renewal fails (it cannot reconnect). The
# lease's last expiry in store time (leases.expires_at, the same host clock
# as `date`) bounds the local deadline from above:
#   SIGTERM at  sent + ttl - margin - kill_after
#   expires_at  >= sent + ttl
# so expires_at - SIGTERM >= margin + kill_after (1.3 s here), while a job
# killed at the local deadline would get SIGTERM only ~margin (0.3 s) before.
source "$(dirname "$0")/lib.sh"

lease=$(unique killtime)
role=$(unique killrole)
sql "CREATE ROLE $role LOGIN" >/dev/null
trap 'sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '"'$role'"'" >/dev/null 2>&1 || true
	sql "DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true; cleanup' EXIT

ttl_ms=3000 margin_ms=300 kill_after_ms=1000
# The job records when SIGTERM reached it (wait is interrupted at once by a
# trapped signal, sleep would delay the trap) and exits.
job='echo $$ > "$DIR/job.pgid"
trap "date +%s%N > \"$DIR/term.ns\"; exit 0" TERM
while :; do sleep 10 & wait $!; done'
PGUSER=$role DIR=$TMP "$PGLEASE" run --lease "$lease" --ttl 3s --kill-after 1s -- sh -c "$job" 2>"$TMP/run.err" &
pid=$!
BG_PIDS+=("$pid")
wait_until 10 test -s "$TMP/job.pgid" || { cat "$TMP/run.err" >&2; fail "job did not start"; }
wait_until 10 lease_valid "$lease" || fail "lease not held"
pgid=$(cat "$TMP/job.pgid")
sleep 0.5

# Renewals stop from here on: no new session can be opened for the role.
sql "ALTER ROLE $role NOLOGIN" >/dev/null
[ "$(sql "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '$role') t")" -ge 1 ] ||
	fail "pglease's session not found"

wait_pid "$pid" 10
[ "$RC" -eq 76 ] || { cat "$TMP/run.err" >&2; fail "expected 76, got $RC"; }
wait_until 5 group_gone "$pgid" || fail "process group $pgid survived"
[ -s "$TMP/term.ns" ] || { cat "$TMP/run.err" >&2; fail "the job got no SIGTERM"; }
term_ns=$(cat "$TMP/term.ns")
expires_ns=$(sql "SELECT (extract(epoch FROM expires_at) * 1000000000)::bigint FROM leases WHERE name = '$lease'")
lead_ms=$(( (expires_ns - term_ns) / 1000000 ))
# The slack (500 ms) is the job's own trap and `date` on a loaded machine;
# it still tells --kill-after before the deadline (1,300 ms) from a kill at
# the deadline (300 ms).
slack_ms=500
echo "SIGTERM reached the job ${lead_ms} ms before the lease's expiry in store time" \
	"(want >= margin + kill-after = $((margin_ms + kill_after_ms)) ms, less ${slack_ms} ms of scheduling slack)"
[ "$lead_ms" -ge $((margin_ms + kill_after_ms - slack_ms)) ] ||
	{ cat "$TMP/run.err" >&2; fail "SIGTERM only ${lead_ms} ms before the expiry: killed at the local deadline, not --kill-after before it"; }
# Not absurdly early either: at most one renew interval (ttl/3) more, in
# case the terminated session had renewed once more without telling us.
[ "$lead_ms" -le $((margin_ms + kill_after_ms + ttl_ms / 3 + 300)) ] ||
	{ cat "$TMP/run.err" >&2; fail "SIGTERM ${lead_ms} ms before the expiry: far too early"; }
grep -q "sending SIGTERM" "$TMP/run.err" || fail "no SIGTERM reported"
pass "SIGTERM ${lead_ms} ms before the expiry (kill-after 1 s, margin 300 ms), exit 76"
