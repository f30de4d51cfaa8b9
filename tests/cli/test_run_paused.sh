#!/usr/bin/env bash
# A paused `pglease run` tree (SIGSTOP on pglease and its job's group, past
# the ttl): a follower takes over; when the job wakes, its psql inserts into
# a fenced table are refused (LS001) by the database itself; when pglease
# wakes it kills the group at once and exits 76. No stale row lands.
source "$(dirname "$0")/lib.sh"

lease=$(unique paused)
table=$(unique paused_t)
sql "CREATE TABLE $table (id bigserial PRIMARY KEY, writer text, epoch bigint, at timestamptz DEFAULT clock_timestamp())" >/dev/null
trap 'sql "DROP TABLE IF EXISTS $table" >/dev/null 2>&1 || true; cleanup' EXIT
"$PGLEASE" -q fence "$table" --lease "$lease"

# The job: one fenced insert every 100 ms through psql, which carries the
# epoch in PGOPTIONS; failures are logged with their SQLSTATE.
job='echo $$ > "$DIR/job.pgid"
while :; do
	psql -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=sqlstate -c "INSERT INTO $TABLE (writer) VALUES ('"'"'old'"'"')" 2>>"$DIR/job.err" >/dev/null
	sleep 0.1
done'

for round in 1 2; do
	rm -f "$TMP/job.pgid" "$TMP/job.err"
	DIR=$TMP TABLE=$table "$PGLEASE" run --lease "$lease" --ttl 2s --identity old --kill-after 600ms -- sh -c "$job" 2>"$TMP/run.err" &
	pid=$!
	BG_PIDS+=("$pid")
	wait_until 10 test -s "$TMP/job.pgid" || fail "job did not start"
	pgid=$(cat "$TMP/job.pgid")
	old_epoch=$(lease_epoch "$lease")
	wait_until 10 bash -c "[ \$(psql -X -A -t -c \"SELECT count(*) FROM $table WHERE epoch = $old_epoch\") -ge 3 ]" ||
		fail "the job's fenced inserts did not land"

	# Pause the whole tree past the ttl; a follower takes over meanwhile.
	kill -STOP "$pid"
	kill -STOP -"$pgid"
	sleep 2.3
	new_epoch=$("$PGLEASE" acquire "$lease" --identity new --ttl 30s)
	[ "$new_epoch" -gt "$old_epoch" ] || fail "takeover epoch $new_epoch not larger than $old_epoch"
	takeover=$(sql "SELECT max(time) FROM lease_events WHERE name = '$lease' AND epoch = $new_epoch")

	if [ $round = 1 ]; then
		# Round 1: the job wakes first (the worst case): its writes are refused.
		kill -CONT -"$pgid"
		wait_until 10 grep -q "LS001" "$TMP/job.err" || { cat "$TMP/job.err" >&2; fail "no LS001 refusal in the job's log"; }
		kill -CONT "$pid"
		wait_pid "$pid" 5
	else
		# Round 2: both wake together: pglease kills at once, before the job
		# gets far (SIGKILL, no grace: the local deadline passed long ago).
		start=$(date +%s%N)
		kill -CONT "$pid"
		# pglease may have killed the group already (its first act)
		kill -CONT -"$pgid" 2>/dev/null || true
		wait_pid "$pid" 5
		elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
		[ "$elapsed" -lt 1000 ] || fail "pglease took ${elapsed} ms after SIGCONT"
		grep -q "no grace period left" "$TMP/run.err" || { cat "$TMP/run.err" >&2; fail "no immediate kill"; }
	fi
	[ "$RC" -eq 76 ] || { cat "$TMP/run.err" >&2; fail "round $round: expected 76, got $RC"; }
	wait_until 5 group_gone "$pgid" || fail "round $round: process group $pgid survived"

	stale=$(sql "SELECT count(*) FROM $table WHERE epoch = $old_epoch AND at >= '$takeover'")
	[ "$stale" = 0 ] || fail "round $round: $stale stale rows landed after the takeover"
	[ "$(lease_holder "$lease")" = new ] || fail "round $round: the new holder lost the lease"
	"$PGLEASE" -q release "$lease" --identity new --epoch "$new_epoch"
	pass "round $round: paused tree refused (LS001 in the job's log: $(grep -c LS001 "$TMP/job.err" || true)), exit 76, group gone, no stale row"
done
