#!/usr/bin/env bash
# pglease run when the lease is lost while the job runs: exit 76, and the
# job's whole process group is gone, including a grandchild from `sh -c`,
# even one that ignores SIGTERM (SIGKILL after --kill-after).
source "$(dirname "$0")/lib.sh"

lease=$(unique lost)
job='echo $$ > "$DIR/job.pgid"; sleep 300 & echo $! > "$DIR/grandchild.pid"; trap "" TERM; while :; do sleep 0.1; done'

# 1. Revoked: noticed at once (NOTIFY), not at the next renewal (every
#    ttl/3 = 3 s; the bound below leaves 1.4 s for NOTIFY on a loaded machine).
DIR=$TMP "$PGLEASE" run --lease "$lease" --ttl 9s --kill-after 500ms -- sh -c "$job" 2>"$TMP/lost.err" &
pid=$!
BG_PIDS+=("$pid")
wait_until 10 test -s "$TMP/grandchild.pid" || fail "job did not start"
wait_until 10 lease_valid "$lease" || fail "lease not held"
pgid=$(cat "$TMP/job.pgid")
gc=$(cat "$TMP/grandchild.pid")
kill -0 "$gc" || fail "grandchild not running"
start=$(date +%s%N)
"$PGLEASE" revoke "$lease"
wait_pid "$pid" 10
[ "$RC" -eq 76 ] || { cat "$TMP/lost.err" >&2; fail "expected 76 after revoke, got $RC"; }
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$elapsed" -lt 1900 ] || fail "took ${elapsed} ms to stop after revoke (ttl/3 = 3 s would mean it waited for a renewal)"
wait_until 5 group_gone "$pgid" || fail "process group $pgid survived"
! kill -0 "$gc" 2>/dev/null || fail "grandchild $gc survived"
grep -q "SIGKILL" "$TMP/lost.err" || fail "no SIGKILL escalation for a job ignoring SIGTERM"
pass "revoked: 76 in ${elapsed} ms, group and grandchild gone"

# 2. Taken over after the renewals stop: the renew session is terminated
#    and the server is made to refuse the renewal (another holder).
rm -f "$TMP"/*.pid "$TMP"/job.pgid
DIR=$TMP "$PGLEASE" run --lease "$lease" --ttl 2s -- sh -c "$job" 2>"$TMP/lost2.err" &
pid=$!
BG_PIDS+=("$pid")
wait_until 10 test -s "$TMP/grandchild.pid" || fail "job did not start"
pgid=$(cat "$TMP/job.pgid")
# Stop pglease's renewals by pausing only pglease; after the ttl another
# holder takes over; then pglease continues: it must see the deadline passed.
kill -STOP "$pid"
sleep 2.5
"$PGLEASE" acquire "$lease" --identity usurper --ttl 5s >/dev/null
kill -CONT "$pid"
wait_pid "$pid" 5
[ "$RC" -eq 76 ] || { cat "$TMP/lost2.err" >&2; fail "expected 76 after a takeover, got $RC"; }
wait_until 5 group_gone "$pgid" || fail "process group $pgid survived"
grep -q "deadline passed" "$TMP/lost2.err" || { cat "$TMP/lost2.err" >&2; fail "did not report the passed deadline"; }
[ "$(lease_holder "$lease")" = usurper ] || fail "pglease disturbed the new holder"
pass "renewals stopped past the ttl: 76, group gone, new holder untouched"
