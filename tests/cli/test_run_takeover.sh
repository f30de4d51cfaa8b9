#!/usr/bin/env bash
# pglease run --take-over: the holder stops its job, hands the lease to the
# requester and exits 0; the requester's job starts after the old one ended
# (no overlap), with the handed epoch. Requests from another role are
# ignored (and logged); --take-over with --no-wait is a usage error.
source "$(dirname "$0")/lib.sh"

lease=$(unique takeover)
log="$TMP/jobs.log"

# Each job appends "<who> <event> <ns>" lines; A ticks until SIGTERM.
job_a='trap '"'"'echo "A end $(date +%s%N)" >>"$LOG"; exit 0'"'"' TERM
	echo "A start $(date +%s%N) $PGLEASE_EPOCH" >>"$LOG"
	while :; do echo "A tick $(date +%s%N)" >>"$LOG"; sleep 0.01; done'
job_b='echo "B start $(date +%s%N) $PGLEASE_EPOCH" >>"$LOG"
	for i in 1 2 3; do echo "B tick $(date +%s%N)" >>"$LOG"; sleep 0.01; done
	echo "B end $(date +%s%N)" >>"$LOG"'

# 1. Rolling takeover.
LOG=$log "$PGLEASE" run --lease "$lease" --ttl 3s --identity old-instance -- sh -c "$job_a" \
	2>"$TMP/a.err" &
a_pid=$!
BG_PIDS+=("$a_pid")
wait_until 5 grep -qs '^A tick' "$log" || fail "A's job did not start"
a_epoch=$(awk '$1 == "A" && $2 == "start" { print $4 }' "$log")

LOG=$log "$PGLEASE" run --lease "$lease" --ttl 3s --identity new-instance --take-over -- \
	sh -c "$job_b" 2>"$TMP/b.err" &
b_pid=$!
BG_PIDS+=("$b_pid")
wait_pid "$a_pid" 10
[ "$RC" -eq 0 ] || { cat "$TMP/a.err" >&2; fail "the old instance exited $RC, not 0"; }
wait_pid "$b_pid" 10
[ "$RC" -eq 0 ] || { cat "$TMP/b.err" >&2; fail "the new instance exited $RC, not 0"; }
grep -q 'handed lease .* over to new-instance' "$TMP/a.err" || fail "A did not say it handed over"
pass "old instance hands over and exits 0; new one runs its job"

# No overlap: every A line comes before every B line, in the file and in time.
last_a_line=$(grep -n '^A ' "$log" | tail -1 | cut -d: -f1)
first_b_line=$(grep -n '^B ' "$log" | head -1 | cut -d: -f1)
[ "$last_a_line" -lt "$first_b_line" ] || { cat "$log" >&2; fail "the jobs overlapped (file order)"; }
a_end=$(awk '$1 == "A" && $2 == "end" { print $3 }' "$log")
b_start=$(awk '$1 == "B" && $2 == "start" { print $3 }' "$log")
[ -n "$a_end" ] || fail "A's job did not end by its SIGTERM trap"
[ "$b_start" -gt "$a_end" ] || fail "B's job started before A's ended"
gap_us=$(( (b_start - a_end) / 1000 ))
echo "takeover gap (A's job ended -> B's job started): $gap_us us"
[ "$gap_us" -lt 2000000 ] || fail "gap $gap_us us is not below 2 s"
pass "no overlap; gap $gap_us us"

# B runs with the epoch the handover granted, newer than A's.
b_epoch=$(awk '$1 == "B" && $2 == "start" { print $4 }' "$log")
handed=$(sql "SELECT epoch FROM lease_events WHERE name = '$lease' AND event = 'handover' ORDER BY id DESC LIMIT 1")
[ "$b_epoch" = "$handed" ] || fail "B ran with epoch $b_epoch, the handover granted $handed"
[ "$b_epoch" -gt "$a_epoch" ] || fail "B's epoch $b_epoch is not newer than A's $a_epoch"
[ "$(sql "SELECT holder FROM lease_events WHERE name = '$lease' AND event = 'handover' ORDER BY id DESC LIMIT 1")" = new-instance ] ||
	fail "handover event not for new-instance"
pass "new instance runs with the handed epoch"

# 2. A request from another role is ignored (logged); the holder keeps running.
other_role="cli_takeover_$$"
sql "CREATE ROLE $other_role LOGIN" >/dev/null
trap 'sql "DROP ROLE IF EXISTS $other_role" >/dev/null 2>&1 || true; cleanup' EXIT
lease2=$(unique takeover_role)
LOG="$TMP/jobs2.log" "$PGLEASE" run --lease "$lease2" --ttl 3s --identity holder -- sh -c "$job_a" \
	2>"$TMP/a2.err" &
a2_pid=$!
BG_PIDS+=("$a2_pid")
wait_until 5 grep -qs '^A tick' "$TMP/jobs2.log" || fail "the holder's job did not start"
# The request as --take-over would send it, from a session of the other role
# that stays open (as the requester's does) while the holder checks it.
psql -X -q -U "$other_role" -c \
	"SELECT pg_notify('pg_lease_handover', '{\"lease\":\"$lease2\",\"requester\":\"intruder\"}')" \
	-c "SELECT pg_sleep(1.5)" >/dev/null &
notifier=$!
wait_until 5 grep -q 'ignoring a handover request.*role '"$other_role" "$TMP/a2.err" ||
	{ cat "$TMP/a2.err" >&2; fail "the holder did not log the ignored request"; }
wait "$notifier"
kill -0 "$a2_pid" 2>/dev/null || fail "the holder exited after a request from another role"
[ "$(lease_holder "$lease2")" = holder ] || fail "the lease moved to $(lease_holder "$lease2")"
! grep -q '^A end' "$TMP/jobs2.log" || fail "the holder's job was stopped"
pass "request from another role ignored"

kill -TERM "$a2_pid"
wait_pid "$a2_pid" 10

# 3. --take-over cannot be combined with --no-wait.
expect_rc 2 "$PGLEASE" run --lease "$lease" --take-over --no-wait -- true
pass "--take-over --no-wait is a usage error"
