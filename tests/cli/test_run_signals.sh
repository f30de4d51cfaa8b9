#!/usr/bin/env bash
# Signals to pglease run: SIGTERM and SIGINT go to the job's group, the job's
# status comes back, the lease is released at once; a second SIGTERM
# escalates to SIGKILL; a signal while waiting for the lease ends the wait.
source "$(dirname "$0")/lib.sh"

lease=$(unique signals)

start_job()
{
	rm -f "$TMP/job.pgid" "$TMP/got"
	DIR=$TMP "$PGLEASE" run --lease "$lease" --ttl 3s -- sh -c "$1" 2>"$TMP/run.err" &
	pid=$!
	BG_PIDS+=("$pid")
	wait_until 10 test -s "$TMP/job.pgid" || fail "job did not start"
	pgid=$(cat "$TMP/job.pgid")
	epoch=$(lease_epoch "$lease")
}

# 1. SIGTERM: forwarded; the job's trap runs and decides the exit status.
start_job 'echo $$ > "$DIR/job.pgid"; trap "echo TERM > \"\$DIR/got\"; exit 5" TERM; while :; do sleep 0.1; done'
kill -TERM "$pid"
wait_pid "$pid" 10
[ "$RC" -eq 5 ] || fail "SIGTERM: expected the job's status 5, got $RC"
[ "$(cat "$TMP/got")" = TERM ] || fail "the job did not get SIGTERM"
[ "$(lease_holder "$lease")" = "" ] || fail "lease not released after SIGTERM"
[ "$(sql "SELECT count(*) FROM lease_events WHERE name = '$lease' AND event = 'released' AND epoch = $epoch")" = 1 ] ||
	fail "no released event after SIGTERM"
pass "SIGTERM forwarded, status 5 passed through, lease released"

# 2. SIGINT: the job dies of it; 128 + 2.
start_job 'echo $$ > "$DIR/job.pgid"; exec sleep 300'
kill -INT "$pid"
wait_pid "$pid" 10
[ "$RC" -eq 130 ] || fail "SIGINT: expected 130, got $RC"
[ "$(lease_holder "$lease")" = "" ] || fail "lease not released after SIGINT"
pass "SIGINT forwarded: 130, lease released"

# 3. A job that ignores SIGTERM: the second SIGTERM sends SIGKILL.
start_job 'echo $$ > "$DIR/job.pgid"; trap "" TERM; sleep 300 & while :; do sleep 0.1; done'
kill -TERM "$pid"
sleep 0.5
kill -0 -"$pgid" 2>/dev/null || fail "the job died of an ignored SIGTERM"
kill -TERM "$pid"
wait_pid "$pid" 10
[ "$RC" -eq 137 ] || fail "second SIGTERM: expected 137, got $RC"
wait_until 5 group_gone "$pgid" || fail "process group $pgid survived SIGKILL"
[ "$(lease_holder "$lease")" = "" ] || fail "lease not released after SIGKILL"
pass "second SIGTERM: SIGKILL to the group, 137, lease released"

# 4. SIGTERM while waiting for the lease: no job, 143.
held=$("$PGLEASE" acquire "$lease" --identity holder --ttl 30s)
"$PGLEASE" run --lease "$lease" -- touch "$TMP/ran" 2>"$TMP/wait.err" &
pid=$!
BG_PIDS+=("$pid")
wait_until 10 grep -q "waiting" "$TMP/wait.err" || fail "run did not wait"
kill -TERM "$pid"
wait_pid "$pid" 5
[ "$RC" -eq 143 ] || fail "SIGTERM while waiting: expected 143, got $RC"
[ ! -e "$TMP/ran" ] || fail "the job ran without the lease"
"$PGLEASE" release "$lease" --identity holder --epoch "$held"
pass "SIGTERM while waiting: 143, no job"

# 5. A release hands over at once to a waiting run (NOTIFY, not the expiry).
held=$("$PGLEASE" acquire "$lease" --identity holder --ttl 30s)
"$PGLEASE" run --lease "$lease" -- sh -c 'echo "$PGLEASE_EPOCH" > "$0"' "$TMP/handover" 2>"$TMP/wait.err" &
pid=$!
BG_PIDS+=("$pid")
wait_until 10 grep -q "waiting" "$TMP/wait.err" || fail "run did not wait"
start=$(date +%s%N)
"$PGLEASE" release "$lease" --identity holder --epoch "$held"
wait_pid "$pid" 10
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$RC" -eq 0 ] || { sed 's/^/  run stderr: /' "$TMP/wait.err" >&2; fail "handover run exited $RC"; }
[ "$(cat "$TMP/handover")" -gt "$held" ] || fail "handover epoch not larger"
[ "$elapsed" -lt 3000 ] || fail "handover took ${elapsed} ms (the lease had 30 s left)"
pass "release hands over to a waiting run in ${elapsed} ms"
