#!/usr/bin/env bash
# pglease run: environment and PGOPTIONS, exit status passed through,
# --no-wait while held (75), waiting for a lease that expires, release at exit.
source "$(dirname "$0")/lib.sh"

lease=$(unique basics)

# Jobs that end at once run under 10 s grants: under a 2 s one, a loaded
# machine (CI, a fresh run beside builds) lost the lease before env exited,
# and run exits 76 then. Only 4. and 5. are about expiry.

# 1. The job sees the lease; PGOPTIONS keeps what the caller had.
PGOPTIONS="-c work_mem=2MB" "$PGLEASE" run --lease "$lease" --ttl 10s --identity basics-1 -- \
	sh -c 'printf "%s|%s|%s|%s\n" "$PGLEASE_NAME" "$PGLEASE_EPOCH" "$PGLEASE_HOLDER" "$PGOPTIONS"
	       psql -X -A -t -c "SHOW pg_lease.epoch"' >"$TMP/env.out"
IFS='|' read -r name epoch holder options <"$TMP/env.out"
[ "$name" = "$lease" ] || fail "PGLEASE_NAME=$name"
[ "$holder" = basics-1 ] || fail "PGLEASE_HOLDER=$holder"
[[ "$epoch" =~ ^[0-9]+$ ]] || fail "PGLEASE_EPOCH=$epoch"
[ "$options" = "-c work_mem=2MB -c pg_lease.epoch=$epoch" ] || fail "PGOPTIONS=$options"
[ "$(sed -n 2p "$TMP/env.out")" = "$epoch" ] || fail "psql in the job does not carry pg_lease.epoch"
pass "environment and PGOPTIONS"

# 1b. Exactly one PGOPTIONS entry, whether the caller had one or not. The
# job is exec'd directly (env prints its environment as it got it): a
# shell would keep one of two entries and hide the duplicate.
for caller in "-c work_mem=2MB" ""; do
	if [ -n "$caller" ]; then
		PGOPTIONS="$caller" "$PGLEASE" -q run --lease "$lease" --ttl 10s -- env >"$TMP/env.all"
		want="$caller -c pg_lease.epoch="
	else
		env -u PGOPTIONS "$PGLEASE" -q run --lease "$lease" --ttl 10s -- env >"$TMP/env.all"
		want="-c pg_lease.epoch="
	fi
	count=$(grep -c '^PGOPTIONS=' "$TMP/env.all" || true)
	[ "$count" = 1 ] || fail "the job got $count PGOPTIONS entries (caller's: '$caller'): $(grep '^PGOPTIONS=' "$TMP/env.all" | paste -sd'|' -)"
	got=$(sed -n 's/^PGOPTIONS=//p' "$TMP/env.all")
	job_epoch=$(sed -n 's/^PGLEASE_EPOCH=//p' "$TMP/env.all")
	[ "$got" = "$want$job_epoch" ] || fail "PGOPTIONS=$got (caller's: '$caller')"
done
pass "exactly one PGOPTIONS, carrying the epoch, for a job run without a shell"

# 2. Released at exit: free at once, with a 'released' event for that epoch.
[ "$(lease_holder "$lease")" = "" ] || fail "lease not released after the job"
[ "$(sql "SELECT count(*) FROM lease_events WHERE name = '$lease' AND event = 'released' AND epoch = $epoch")" = 1 ] ||
	fail "no released event"
pass "released when the job ends"

# 3. Exit status passed through; 128+N for a signal; 127 for a missing command.
expect_rc 7 "$PGLEASE" -q run --lease "$lease" --ttl 10s -- sh -c 'exit 7'
expect_rc 0 "$PGLEASE" -q run --lease "$lease" --ttl 10s -- true
expect_rc 137 "$PGLEASE" -q run --lease "$lease" --ttl 10s -- sh -c 'kill -KILL $$'
expect_rc 127 "$PGLEASE" -q run --lease "$lease" --ttl 10s -- /nonexistent/command
[ "$(lease_holder "$lease")" = "" ] || fail "lease not released after a failed exec"
pass "exit status passed through"

# --lock-delay is recorded with the job's grant (and skipped by the release).
delay=$("$PGLEASE" -q run --lease "$lease" --ttl 10s --lock-delay 7s -- \
	psql -XAtqc "SELECT extract(epoch FROM lock_delay)::int FROM leases WHERE name = '$lease'")
[ "$delay" = 7 ] || fail "run --lock-delay recorded '$delay'"
[ "$(sql "SELECT extract(epoch FROM lock_delay)::int FROM leases WHERE name = '$lease'")" = 0 ] ||
	fail "the release at the job's end kept the lock delay"
pass "run --lock-delay"

# 4. Held elsewhere: --no-wait exits 75 at once (well before the 5 s grant
# expires), without running the job.
other=$("$PGLEASE" acquire "$lease" --identity somebody-else --ttl 5s)
start=$(date +%s%N)
expect_rc 75 "$PGLEASE" run --lease "$lease" --no-wait -- touch "$TMP/ran"
[ ! -e "$TMP/ran" ] || fail "the job ran although the lease was held"
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 3500 ] || fail "--no-wait did not exit at once"
pass "--no-wait while held: 75"

# 5. Without --no-wait it waits for the expiry, then runs with a larger epoch.
"$PGLEASE" -q run --lease "$lease" --ttl 10s -- sh -c 'echo "$PGLEASE_EPOCH"' >"$TMP/waited.out"
[ "$(cat "$TMP/waited.out")" -gt "$other" ] || fail "the waiting run did not get a larger epoch"
pass "waits for the lease, then runs"
