#!/usr/bin/env bash
# The SQL edition where it may not end a stalled writer: its owner, a
# database owner who is no superuser, has no pg_signal_backend, and the
# stalled writer is another role's (docs/sql.md; issue 52, item 5). The
# install says so (a WARNING). A writer stalled idle in its fenced
# transaction ends itself: the fence set its transaction's own
# idle_in_transaction_session_timeout to the rest of its grant plus
# pg_lease.takeover_timeout, so a takeover behind it gets the lease within
# ttl + takeover_timeout + a few seconds, and the stale writer never
# commits (an owner's own writer, which it may end, gets no such bound).
# A writer stalled in a running statement is not bounded so: a change of
# holder behind it waits pg_lease.takeover_timeout, is refused when it
# tries to end the writer (a WARNING naming the backend), waits out the
# bound (takeover_timeout + 5 s) and fails with 55P03: no new grant and no
# new epoch, so the writer still commits, under the grant it holds the
# lock of. Once it has, the change goes through. A raise of a downstream
# floor behind another role's lease_raise of a lower epoch, stalled in its
# transaction, is refused the same way (55P03 at the same bound). Timing
# bounds are generous; every wait is bounded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

sql_edition_cluster sql_edition_no_signal
work=$PG_CLUSTER_ROOT

export PGDATABASE=app PGUSER=app_owner
install() { psql -X -q -v ON_ERROR_STOP=1 -f "$work/pg_lease_sql.sql" 2>"$work/install.err"; }
check "the database owner (no superuser) installs the SQL edition with psql -f" install
check "the install warns that the owner may not end other roles' sessions, and what bound holds ($(tr '\n' ' ' <"$work/install.err"))" \
	python3 -c "import re, sys; t = open('$work/install.err').read(); sys.exit(0 if re.search(r'WARNING: +pg_lease_sql: role \"app_owner\" may not end other roles. sessions \(no pg_signal_backend\)', t)
		and 'expiry + pg_lease.takeover_timeout' in t and 'GRANT pg_signal_backend TO app_owner' in t else 1)"
check "the owner is no superuser, not a member of pg_signal_backend nor of app_user" \
	test "$(q "SELECT rolsuper::text || pg_has_role('app_owner', 'pg_signal_backend', 'MEMBER')::text
		|| pg_has_role('app_owner', 'app_user', 'MEMBER')::text FROM pg_roles WHERE rolname = current_user")" = falsefalsefalse
q "CREATE TABLE jobs (id int PRIMARY KEY, note text, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs', 'tk')" >/dev/null
q "GRANT SELECT, INSERT, UPDATE ON jobs TO app_user" >/dev/null
q "INSERT INTO lease_sql_settings VALUES ('pg_lease.takeover_timeout', '1s')" >/dev/null
as_user() { PGUSER=app_user q "$1"; }

# stall SQL: an app_user session runs SQL in a transaction, then waits idle
# in it for $work/go (at most 120 s) and commits; $stalled is its psql, $pid
# its backend once idle in its transaction.
stall()
{
	rm -f "$work/stall.pid" "$work/go"
	PGUSER=app_user psql -X -q -A -t -v ON_ERROR_STOP=1 >"$work/stall.out" 2>&1 <<SQL &
\o $work/stall.pid
SELECT pg_backend_pid();
\o
BEGIN;
$1
SHOW idle_in_transaction_session_timeout;
\! for i in \$(seq 1200); do [ -e $work/go ] && break; sleep 0.1; done
COMMIT;
SQL
	stalled=$!
	pid=$(idle_in_transaction_pid "$work/stall.pid")
}

# --- a stalled writer of app_user's, under a grant that expires ---------------
# (a ttl the write fits in on a loaded machine; then waited out)
granted_at=$(date +%s.%N)
e1=$(as_user "SELECT epoch FROM lease_acquire('tk', 'stalled', '5s')")
# It writes under the grant, then waits idle in its transaction until
# $work/go (at most 120 s, far past the bound below: a takeover that
# waited for it would show).
stall "SELECT lease_use('tk', $e1); INSERT INTO jobs (id, note) VALUES (10, 'stalled');"
check "the writer holds the grant's fence lock, idle in its transaction" \
	test "$(q "SELECT count(*) FROM lease_writers WHERE name = 'tk' AND epoch = $e1 AND granted AND pid = ${pid:-0}")" = 1
bound=$(sed -n 's/^\([0-9]*\)ms$/\1/p' "$work/stall.out" | tail -1)
check "the fence set the writer's own idle_in_transaction_session_timeout to the rest of its grant + takeover_timeout (${bound:-none} ms; 1 to 6000)" \
	test "${bound:-0}" -ge 1 -a "${bound:-0}" -le 6000
# the grant expires (within 5 s; 15 s allowed)
for _ in $(seq 150); do
	[ "$(q "SELECT expires_at < clock_timestamp() FROM leases WHERE name = 'tk'")" = t ] && break
	sleep 0.1
done
check "the grant has expired" test "$(q "SELECT expires_at < clock_timestamp() FROM leases WHERE name = 'tk'")" = t

# --- a takeover behind it gets the lease within the bound ------------------------
started=$(date +%s.%N)
e2=$(PGUSER=app_user timeout 120 psql -X -q -A -t -v ON_ERROR_STOP=1 -c "\\set VERBOSITY verbose" \
	-c "SELECT epoch FROM lease_acquire('tk', 'taker', '5s') WHERE acquired" 2>"$work/takeover.err") || e2=""
elapsed=$(python3 -c "import time; print(round(time.time() - $started, 3))")
since_grant=$(python3 -c "import time; print(round(time.time() - $granted_at, 3))")
check "the takeover gets the lease, with a larger epoch (got ${e2:-nothing}: $(tr '\n' ' ' <"$work/takeover.err"))" \
	test "${e2:-0}" -gt "$e1"
check "within ttl + takeover_timeout + 5 s of the stalled grant, with a loaded machine's slack ($since_grant s since the grant, nominal 6; 20 allowed; the takeover itself $elapsed s)" \
	python3 -c "import sys; sys.exit(0 if $since_grant <= 20 else 1)"
check "the lease is the taker's" \
	test "$(q "SELECT holder || ' ' || epoch FROM leases WHERE name = 'tk'")" = "taker ${e2:-0}"
touch "$work/go"
committed=ok
wait "$stalled" || committed=failed
check "the stalled writer was ended by its own server, idle in its transaction ($(tr '\n' ' ' <"$work/stall.out"))" \
	grep -q "terminating connection due to idle-in-transaction timeout" "$work/stall.out"
check "the stale writer never commits ($committed)" \
	test "$committed/$(q "SELECT count(*) FROM jobs WHERE id = 10")" = failed/0
check "its backend is gone" \
	test "$(PGUSER=postgres q "SELECT count(*) FROM pg_stat_activity WHERE pid = ${pid:-0}")" = 0

# --- no bound where the owner may end the writer: the owner's own ----------------
e3=$(q "SELECT epoch FROM lease_acquire('own', 'owner', '5s')")
q "CREATE TABLE own_jobs (id int, epoch bigint); SELECT lease_fence('own_jobs', 'own')" >/dev/null
check "a fenced transaction of the owner's own role keeps its idle_in_transaction_session_timeout (0)" \
	test "$(psql -X -q -A -t -v ON_ERROR_STOP=1 -c "BEGIN" -c "SELECT lease_use('own', $e3)" -c "INSERT INTO own_jobs VALUES (1)" \
		-c "SHOW idle_in_transaction_session_timeout" -c "COMMIT" | tail -1)" = 0

# --- a writer stalled in a running statement: not bounded so ---------------------
# app_user's writer waits, after its write, for an advisory lock that a
# postgres session holds until $work/go: a statement still running.
rm -f "$work/go"
PGUSER=postgres psql -X -q -A -t -v ON_ERROR_STOP=1 >/dev/null 2>&1 <<SQL &
SELECT pg_advisory_lock(4242);
\! for i in \$(seq 1200); do [ -e $work/go ] && break; sleep 0.1; done
SQL
blocker=$!
for _ in $(seq 100); do
	[ "$(PGUSER=postgres q "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND granted")" = 1 ] && break
	sleep 0.1
done
q "CREATE TABLE jobs_tr (id int PRIMARY KEY, note text, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs_tr', 'tr')" >/dev/null
q "GRANT SELECT, INSERT, UPDATE ON jobs_tr TO app_user" >/dev/null
e1=$(as_user "SELECT epoch FROM lease_acquire('tr', 'stalled', '5s')")
PGUSER=app_user psql -X -q -A -t -v ON_ERROR_STOP=1 >"$work/stall.out" 2>&1 <<SQL &
BEGIN;
SELECT lease_use('tr', $e1);
INSERT INTO jobs_tr (id, note) VALUES (11, 'stalled');
SELECT pg_advisory_xact_lock(4242);
COMMIT;
SQL
stalled=$!
pid=""
for _ in $(seq 100); do
	pid=$(PGUSER=postgres q "SELECT pid FROM pg_stat_activity WHERE usename = 'app_user' AND wait_event_type = 'Lock' AND query LIKE '%4242%'")
	[ -n "$pid" ] && break
	sleep 0.1
done
check "the writer holds the grant's fence lock, running a statement (waiting for a lock)" \
	test "$(q "SELECT count(*) FROM lease_writers WHERE name = 'tr' AND epoch = $e1 AND granted AND pid = ${pid:-0}")" = 1
for _ in $(seq 150); do
	[ "$(q "SELECT expires_at < clock_timestamp() FROM leases WHERE name = 'tr'")" = t ] && break
	sleep 0.1
done
check "the grant has expired" test "$(q "SELECT expires_at < clock_timestamp() FROM leases WHERE name = 'tr'")" = t

started=$(date +%s.%N)
state=$(PGUSER=app_user timeout 120 psql -X -q -A -t -v ON_ERROR_STOP=1 -c "\\set VERBOSITY verbose" \
	-c "SELECT epoch FROM lease_acquire('tr', 'taker', '5s')" 2>"$work/takeover.err" >"$work/takeover.out" && echo ok ||
	sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p' "$work/takeover.err" | head -1)
elapsed=$(python3 -c "import time; print(round(time.time() - $started, 3))")
check "the takeover fails with 55P03 (got ${state:-nothing}: $(cat "$work/takeover.out"))" test "$state" = 55P03
check "after the bound, takeover_timeout + 5 s ($elapsed s, timeout 1 s; 5.5 to 30 s)" \
	python3 -c "import sys; sys.exit(0 if 5.5 <= $elapsed <= 30 else 1)"
check "with a WARNING naming the backend it was not allowed to end" \
	grep -q "WARNING: *01000: pg_lease: not allowed to end backend ${pid:-0}, whose transaction holds the fence lock of lease \"tr\" epoch $e1" "$work/takeover.err"
check "no new grant: the lease is still the stalled grant's" \
	test "$(q "SELECT holder || ' ' || epoch FROM leases WHERE name = 'tr'")" = "stalled $e1"
check "no new epoch in leases or lease_events, no event of lease tr but the first grant's" \
	test "$(q "SELECT greatest((SELECT max(epoch) FROM leases), (SELECT max(epoch) FROM lease_events))")/$(q "SELECT string_agg(event || ' ' || holder, ',') FROM lease_events WHERE name = 'tr'")" = "$e1/acquired stalled"
check "the writer was not ended" \
	test "$(PGUSER=postgres q "SELECT state FROM pg_stat_activity WHERE pid = ${pid:-0}")" = "active"

# --- the stalled writer commits, under the grant it locked ---------------------
touch "$work/go"
committed=ok
wait "$stalled" || committed=failed
wait "$blocker" || true
check "the stalled writer commits ($committed: $(tr '\n' ' ' <"$work/stall.out"))" \
	test "$committed/$(q "SELECT count(*) FROM jobs_tr WHERE id = 11 AND epoch = $e1")" = ok/1

# --- and then the change goes through -------------------------------------------
e2=$(as_user "SELECT epoch FROM lease_acquire('tr', 'taker', '5s') WHERE acquired")
check "then the takeover succeeds, with a larger epoch" test "${e2:-0}" -gt "$e1"

# --- a downstream floor: app_user's lease_raise to 20, stalled -----------------
# A higher raise (the owner's, to 30) is refused the same way (issue 52, item
# 3): it waits takeover_timeout, is refused when it tries to end the stalled
# raise, waits out the bound and fails with 55P03; the floor stays 10 and
# the stalled raise commits it at 20; then the raise to 30 goes through and
# token 20 is refused.
q "CREATE TABLE down (id int, epoch bigint)" >/dev/null
q "SELECT lease_fence('down', 'R', store => 'other-store/db'); SELECT lease_raise('other-store/db', 'R', 10)" >/dev/null
q "GRANT EXECUTE ON FUNCTION lease_raise(text, text, bigint) TO app_user" >/dev/null
stall "SELECT lease_raise('other-store/db', 'R', 20);"
check "app_user's raise to 20 holds the floor lock of 20, idle in its transaction" \
	test "$(q "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 19526 AND objsubid = 2
		AND objid = (lease_sql_floor_key('other-store/db', 'R', 20)::bigint & 4294967295)::oid
		AND mode = 'ShareLock' AND granted AND pid = ${pid:-0}")" = 1
started=$(date +%s.%N)
state=$(timeout 120 psql -X -q -A -t -v ON_ERROR_STOP=1 -c "\\set VERBOSITY verbose" \
	-c "SELECT lease_raise('other-store/db', 'R', 30)" 2>"$work/raise.err" >"$work/raise.out" && echo ok ||
	sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p' "$work/raise.err" | head -1)
elapsed=$(python3 -c "import time; print(round(time.time() - $started, 3))")
check "the raise to 30 fails with 55P03 after the bound, takeover_timeout + 5 s (got ${state:-nothing}: $(cat "$work/raise.out"); $elapsed s, 5.5 to 30 s)" \
	python3 -c "import sys; sys.exit(0 if '$state' == '55P03' and 5.5 <= $elapsed <= 30 else 1)"
check "with a WARNING naming the backend it was not allowed to end" \
	grep -q "WARNING: *01000: pg_lease: not allowed to end backend ${pid:-0}, whose transaction holds the fence lock of lease \"R\" epoch 20" "$work/raise.err"
check "the floor is still 10, and the stalled raise was not ended" \
	test "$(q "SELECT epoch FROM lease_floors WHERE name = 'R'")/$(PGUSER=postgres q "SELECT state FROM pg_stat_activity WHERE pid = ${pid:-0}")" = "10/idle in transaction"
touch "$work/go"
committed=ok
wait "$stalled" || committed=failed
check "the stalled raise commits the floor at 20 ($committed: $(tr '\n' ' ' <"$work/stall.out"))" \
	test "$committed/$(q "SELECT epoch FROM lease_floors WHERE name = 'R'")" = ok/20
check "then the raise to 30 goes through, and token 20 is refused (LS001)" \
	test "$(q "SELECT lease_raise('other-store/db', 'R', 30)")/$(q "SELECT epoch FROM lease_floors WHERE name = 'R'")/$(psql -X -q -c "\\set VERBOSITY sqlstate" \
		-c "BEGIN; SELECT lease_use('R', 20); INSERT INTO down VALUES (1, NULL); COMMIT;" 2>&1 >/dev/null | sed -n 's/^ERROR: *//p')" = t/30/LS001

finish
