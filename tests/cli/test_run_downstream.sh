#!/usr/bin/env bash
# pglease run --downstream: the lease's floor is raised in each downstream
# database before the job starts, so the job's own writes there (psql with
# PGOPTIONS) pass at the floor; a downstream that cannot be raised keeps the
# job from starting: the lease is released, exit 1 with --no-wait, else a
# retry every retry period until a signal ends pglease. A stalled downstream
# is given up at the lease's local deadline, whatever its connect_timeout.
source "$(dirname "$0")/lib.sh"

lease=$(unique downstream)
db=$(unique downstream_db)
store=$(sql "SELECT lease_store_id()")
sql "CREATE DATABASE $db" >/dev/null
trap 'psql -X -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true; cleanup' EXIT
down() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$db" -c "$1"; }
install_edition "$db"
down "CREATE TABLE jobs (id int, epoch bigint)" >/dev/null
down "SELECT lease_fence('jobs', '$lease', store => \$\$$store\$\$)" >/dev/null

# 1. Raised before the job: the job's first write there passes at the floor.
"$PGLEASE" run --lease "$lease" --ttl 3s --downstream "dbname=$db" -- \
	sh -c 'echo "$PGLEASE_EPOCH" >"$0/epoch"; psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$1" -c "SELECT epoch FROM lease_floors" -c "INSERT INTO jobs VALUES (1)"' \
	"$TMP" "$db" >"$TMP/job.out" 2>"$TMP/run.err" || fail "run --downstream failed: $(cat "$TMP/run.err")"
epoch=$(cat "$TMP/epoch")
[ "$(head -1 "$TMP/job.out")" = "$epoch" ] || fail "the floor the job saw ($(head -1 "$TMP/job.out")) is not its epoch $epoch"
[ "$(down "SELECT epoch FROM jobs WHERE id = 1")" = "$epoch" ] || fail "the job's downstream row does not carry its epoch"
grep -q "raised the floor of lease \"$lease\" to epoch $epoch" "$TMP/run.err" || fail "no message about the raise"
pass "the floor is raised before the job, whose writes there pass"

# 2. A token below the floor is refused there (a paused old leader).
PGOPTIONS="-c pg_lease.epoch=$((epoch - 1))" psql -X -q -v VERBOSITY=verbose -d "$db" \
	-c "INSERT INTO jobs VALUES (2)" 2>"$TMP/stale.err" && fail "a token below the floor passed"
grep -q LS001 "$TMP/stale.err" || fail "no LS001: $(cat "$TMP/stale.err")"
pass "a lower token is refused downstream (LS001)"

# 3. Unreachable downstream with --no-wait: the job never starts, exit 1, released.
unreachable="host=127.0.0.1 port=1 connect_timeout=2"
expect_rc 1 "$PGLEASE" run --lease "$lease" --ttl 3s --no-wait --downstream "dbname=$db" \
	--downstream "$unreachable" -- touch "$TMP/ran" 2>"$TMP/nowait.err"
[ ! -e "$TMP/ran" ] || fail "the job ran although a downstream was not raised"
grep -q "the job does not start" "$TMP/nowait.err" || fail "no message: $(cat "$TMP/nowait.err")"
[ "$(lease_holder "$lease")" = "" ] || fail "the lease was not released"
refused=$(sql "SELECT max(epoch) FROM lease_events WHERE name = '$lease' AND event = 'acquired'")
[ "$(sql "SELECT count(*) FROM lease_events WHERE name = '$lease' AND event = 'released' AND epoch = $refused")" = 1 ] ||
	fail "no released event for the refused grant $refused"
pass "an unreachable downstream: no job, lease released, exit 1 (--no-wait)"

# 4. Without --no-wait it tries again every retry period, until a signal.
"$PGLEASE" run --lease "$lease" --ttl 3s --downstream "$unreachable" -- touch "$TMP/ran" 2>"$TMP/wait.err" &
pid=$!
BG_PIDS+=("$pid")
tried_twice() { [ "$(grep -c 'the job does not start' "$TMP/wait.err")" -ge 2 ]; }
wait_until 10 tried_twice || fail "no second try: $(cat "$TMP/wait.err")"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] || fail "exit $rc after SIGTERM while retrying, not 143"
[ ! -e "$TMP/ran" ] || fail "the job ran"
# one try per retry period (ttl/10 = 300 ms), not one per NOTIFY of its own release
tries=$(grep -c 'the job does not start' "$TMP/wait.err")
[ "$tries" -le 40 ] || fail "$tries tries: spinning instead of waiting a retry period"
pass "without --no-wait: retried every retry period ($tries tries) until SIGTERM, the job never ran"

# 5. A stalled downstream (accepts TCP, never answers) whose conninfo allows a
#    10 s connect: given up at the lease's local deadline (ttl 3 s), no job.
python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$TMP/silent.port" &
BG_PIDS+=("$!")
wait_until 5 test -s "$TMP/silent.port" || fail "no silent listener"
stalled="host=127.0.0.1 port=$(cat "$TMP/silent.port") connect_timeout=10"
t0=$(date +%s%N)
expect_rc 1 "$PGLEASE" run --lease "$lease" --ttl 3s --no-wait --downstream "$stalled" -- touch "$TMP/ran" 2>"$TMP/stalled.err"
ms=$((($(date +%s%N) - t0) / 1000000))
[ ! -e "$TMP/ran" ] || fail "the job ran although the stalled downstream was not raised"
[ "$ms" -lt 6000 ] || fail "took $ms ms: not bounded by the local deadline ($(cat "$TMP/stalled.err"))"
grep -q "no connection by the caller's deadline" "$TMP/stalled.err" || fail "no message: $(cat "$TMP/stalled.err")"
[ "$(lease_holder "$lease")" = "" ] || fail "the lease was not released"
pass "a stalled downstream: given up after $ms ms (local deadline), no job, exit 1"
