#!/usr/bin/env bash
# The SQL edition (pg_lease_sql, no C) as a managed service's customer gets
# it: a cluster with no pg_lease library loaded, a database owner who is no
# superuser installing scripts/sql_edition.py's psql script, and the
# guarantee checked as that owner and an application role: epochs that only
# grow, the fence's refusals (LS001, LS002, LS003), a REPEATABLE READ writer
# whose snapshot predates a change of holder refused, a takeover behind a
# stalled writer within ttl + takeover_timeout + 3 s (evicted and recorded), lock delay,
# handover, a downstream floor's stalled lower raise (a write's, or
# lease_raise's) ended by a higher one (evicted and recorded), and epochs
# above every restored one after a dump and restore into a new database.
# Timing bounds are generous; every wait is bounded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

sql_edition_cluster sql_edition
work=$PG_CLUSTER_ROOT

sql_edition_install
check "no pg_lease library is loaded and no function is written in C" \
	test "$(q "SELECT count(*) FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		WHERE p.pronamespace = 'public'::regnamespace AND l.lanname = 'c'")/$(PGUSER=postgres q "SHOW shared_preload_libraries")" = "0/"
check "the owner is no superuser" test "$(q "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")" = f
q "CREATE TABLE jobs (id int PRIMARY KEY, note text, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs', 'tk')" >/dev/null
q "GRANT SELECT, INSERT, UPDATE ON jobs TO app_user" >/dev/null
q "INSERT INTO lease_sql_settings VALUES ('pg_lease.takeover_timeout', '500ms')" >/dev/null
# Ending a stalled writer of another role needs pg_signal_backend (docs/sql.md).
PGUSER=postgres q "GRANT pg_signal_backend TO app_owner" >/dev/null

# sqlstate SQL: the SQLSTATE the statement fails with (as app_user), or "ok".
sqlstate()
{
	local out
	out=$(PGUSER=${AS:-app_user} psql -X -q -A -t -v ON_ERROR_STOP=1 -c "\\set VERBOSITY sqlstate" \
		-c "$1" 2>&1 >/dev/null || true)
	out=$(sed -n 's/^ERROR: *//p' <<<"$out" | head -1)
	echo "${out:-ok}"
}
as_user() { PGUSER=app_user q "$1"; }

# --- 0. a lease never granted ------------------------------------------------
check "a token for a lease never granted is refused (LS002), any token, no row written" \
	test "$(sqlstate "INSERT INTO jobs VALUES (90, 'none yet', 140737488355329)")$(sqlstate "INSERT INTO jobs VALUES (91, 'none yet', 5)")$(q "SELECT count(*) FROM jobs")" = LS002LS0020

# --- 1. grants ---------------------------------------------------------------
e1=$(as_user "SELECT epoch FROM lease_acquire('tk', 'a', '30s')")
check "a refused acquire names the holder" test "$(as_user "SELECT acquired::text || holder FROM lease_acquire('tk', 'b', '30s')")" = falsea
check "the holder acquiring again keeps its epoch" test "$(as_user "SELECT epoch FROM lease_acquire('tk', 'a', '30s')")" = "$e1"
check "renew keeps the epoch" test "$(as_user "SELECT lease_renew('tk', 'a', $e1) IS NOT NULL")" = t
check "another role may not renew it (42501)" test "$(AS=app_owner sqlstate "SELECT lease_renew('tk', 'a', $e1)")" = 42501
check "renewing a wrong epoch returns null" test "$(as_user "SELECT lease_renew('tk', 'a', $e1 + 1) IS NULL")" = t
check "bad input: empty name (22023), null holder (22004), ttl above max (22023)" \
	test "$(sqlstate "SELECT lease_acquire('', 'a', '1s')")/$(sqlstate "SELECT lease_acquire('x', NULL, '1s')")/$(sqlstate "SELECT lease_acquire('x', 'a', '2 days')")" = 22023/22004/22023
check "an application role's SET of an administrator's setting changes nothing" \
	test "$(sqlstate "SET pg_lease.max_ttl = '3 days'; SELECT lease_acquire('set-app', 'a', '2 days')")/$(sqlstate "SET pg_lease.max_ttl = '10s'; SELECT lease_acquire('set-app', 'a', '11s')")" = 22023/ok
check "the owner's SET counts, for its own session (a superuser's in C)" \
	test "$(AS=app_owner sqlstate "SET pg_lease.max_ttl = '3 days'; SELECT lease_acquire('set-owner', 'a', '2 days')")/$(AS=app_owner sqlstate "SET pg_lease.max_ttl = '10s'; SELECT lease_acquire('set-owner', 'a', '11s')")/$(AS=app_owner sqlstate "SELECT lease_acquire('set-owner', 'a', '2 days')")" = ok/22023/22023

# --- 2. the fence ------------------------------------------------------------
check "a write without a token is refused (LS003)" test "$(sqlstate "INSERT INTO jobs VALUES (1, 'none')")" = LS003
check "a write with the epoch column passes" test "$(sqlstate "INSERT INTO jobs VALUES (2, 'row', $e1)")" = ok
check "a write with lease_use passes and stamps the epoch" \
	test "$(sqlstate "BEGIN; SELECT lease_use('tk', $e1); INSERT INTO jobs (id, note) VALUES (3, 'use'); COMMIT;")/$(q "SELECT epoch FROM jobs WHERE id = 3")" = "ok/$e1"
r=$(PGOPTIONS="-c pg_lease.epoch=$e1" sqlstate "INSERT INTO jobs (id, note) VALUES (4, 'setting')")
check "a write with pg_lease.epoch (PGOPTIONS) passes ($r)" test "$r" = ok
check "an UPDATE that leaves the epoch column alone carries no token (LS003)" \
	test "$(sqlstate "UPDATE jobs SET note = 'stale?' WHERE id = 2")" = LS003
check "a token never granted is refused (LS001)" test "$(sqlstate "INSERT INTO jobs VALUES (5, 'x', $e1 + 1000)")" = LS001
as_user "SELECT lease_release('tk', 'a', $e1)" >/dev/null
check "the released grant's token is refused (LS002)" test "$(sqlstate "INSERT INTO jobs VALUES (6, 'x', $e1)")" = LS002
e2=$(as_user "SELECT epoch FROM lease_acquire('tk', 'b', '1s')")
check "the next grant has a larger epoch" test "$e2" -gt "$e1"
check "the old token is stale (LS001)" test "$(sqlstate "INSERT INTO jobs VALUES (7, 'x', $e1)")" = LS001
check "and the message says so, naming the current epoch" \
	grep -q "epoch $e1 of lease \"tk\" is stale" <<<"$(PGUSER=app_user psql -X -c "INSERT INTO jobs VALUES (7, 'x', $e1)" 2>&1 || true)"
sleep 1.2
check "an expired grant's token is refused (LS002)" test "$(sqlstate "INSERT INTO jobs VALUES (8, 'x', $e2)")" = LS002

# --- 3. REPEATABLE READ: a snapshot that predates a change of holder -------
# The grant the writer's snapshot shows is held and unexpired: only the
# newest row says it was released and granted again.
e3=$(as_user "SELECT epoch FROM lease_acquire('tk', 'c', '30s')")
PGUSER=app_user psql -X -q -A -t >"$work/rr.out" 2>&1 <<SQL &
\set VERBOSITY sqlstate
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM jobs;
SELECT pg_sleep(3);
INSERT INTO jobs VALUES (9, 'rr', $e3);
COMMIT;
SQL
rr=$!
for _ in $(seq 100); do  # its snapshot is taken once it sleeps
	[ "$(PGUSER=postgres q "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(3);' AND state = 'active'")" = 1 ] && break
	sleep 0.05
done
as_user "SELECT lease_release('tk', 'c', $e3)" >/dev/null
e4=$(as_user "SELECT epoch FROM lease_acquire('tk', 'd', '5s')")
wait "$rr" || true
check "the change of holder committed while the REPEATABLE READ writer was open" test "$e4" -gt "$e3"
check "that writer is refused, never passed ($(grep ERROR "$work/rr.out" | head -1))" \
	test "$(q "SELECT count(*) FROM jobs WHERE id = 9")" = 0

# --- 4. takeover behind a stalled writer -------------------------------------
as_user "SELECT lease_revoke('tk')" >/dev/null 2>&1 || q "SELECT lease_revoke('tk')" >/dev/null
# (a ttl the write fits in on a loaded machine; the writer then waits for
# $work/go, at most 30 s, so only the takeover can end it)
read -r e5 granted_at < <(as_user "SELECT epoch, extract(epoch FROM clock_timestamp()) FROM lease_acquire('tk', 'stalled', '4s')" | tr '|' ' ')
PGUSER=app_user psql -X -q -A -t >"$work/stall.out" 2>&1 <<SQL &
\o $work/stall.pid
SELECT pg_backend_pid();
\o
BEGIN;
SELECT lease_use('tk', $e5);
INSERT INTO jobs (id, note) VALUES (10, 'stalled');
\! for i in \$(seq 300); do [ -e $work/go ] && break; sleep 0.1; done
COMMIT;
SQL
stalled=$!
for _ in $(seq 100); do
	[ -s "$work/stall.pid" ] &&
		[ "$(q "SELECT count(*) FROM lease_writers WHERE name = 'tk' AND epoch = $e5 AND granted")" = 1 ] && break
	sleep 0.1
done
check "lease_writers shows the stalled writer under its lease and epoch" \
	test "$(q "SELECT count(*) FROM lease_writers WHERE name = 'tk' AND epoch = $e5 AND granted AND pid = $(head -1 "$work/stall.pid")")" = 1
taken=""
for _ in $(seq 100); do
	taken=$(as_user "SELECT epoch FROM lease_acquire('tk', 'taker', '5s') WHERE acquired")
	[ -n "$taken" ] && break
	sleep 0.05
done
taken_at=$(q "SELECT extract(epoch FROM time) FROM lease_events WHERE name = 'tk' AND event = 'takeover' AND epoch = ${taken:-0}")
touch "$work/go"
wait "$stalled" || true
check "another holder is granted the lease behind the stalled writer" test -n "$taken"
# (the bound is liveness, not speed: ttl + takeover_timeout, plus 3 s for
# the tries of a loaded machine; a writer never ended would hold out 30 s)
check "within ttl + takeover_timeout + 3 s of the stalled grant ($(python3 -c "print(round(${taken_at:-1e12} - $granted_at, 3))") s, ttl 4 s, takeover_timeout 0.5 s)" \
	python3 -c "import sys; sys.exit(0 if ${taken_at:-1e12} - $granted_at <= 7.5 else 1)"
check "the stalled transaction never committed" test "$(q "SELECT count(*) FROM jobs WHERE id = 10")" = 0
check "the eviction is recorded with the old holder, epoch and pid" \
	test "$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND holder = 'stalled' AND epoch = $e5 AND pid = $(head -1 "$work/stall.pid")")" = 1

# --- 5. lock delay and handover ----------------------------------------------
as_user "SELECT lease_acquire('ld', 'a', '1s', '3s')" >/dev/null
sleep 1.2
check "a lost grant's lock delay keeps others out" test "$(as_user "SELECT acquired FROM lease_acquire('ld', 'b', '1s')")" = f
check "but not its own holder" test "$(as_user "SELECT acquired FROM lease_acquire('ld', 'a', '1s')")" = t
as_user "SELECT lease_acquire('rv', 'a', '5s', '3s')" >/dev/null
q "SELECT lease_revoke('rv')" >/dev/null
check "a revoked grant keeps its lock delay" test "$(as_user "SELECT acquired FROM lease_acquire('rv', 'b', '1s')")" = f
e6=$(as_user "SELECT epoch FROM lease_acquire('ho', 'a', '5s')")
e7=$(as_user "SELECT lease_handover('ho', 'a', $e6, 'b')")
check "handover grants the successor a larger epoch" test "${e7:-0}" -gt "$e6"
check "to the successor" test "$(q "SELECT holder FROM leases WHERE name = 'ho'")" = b

# --- 5b. a downstream fence (a lease of another store), written by the app role
q "CREATE TABLE down (id int, epoch bigint)" >/dev/null
q "SELECT lease_fence('down', 'L', store => 'other-store/db')" >/dev/null
q "GRANT INSERT ON down TO app_user" >/dev/null
check "a token named for the lease passes downstream and raises the floor" \
	test "$(sqlstate "BEGIN; SELECT lease_use('L', 500); INSERT INTO down VALUES (1, NULL); COMMIT;")/$(q "SELECT epoch FROM lease_floors WHERE name = 'L'")" = ok/500
check "an unnamed token above the floor is not known to be the lease's (LS003)" \
	test "$(sqlstate "INSERT INTO down VALUES (2, 600)")" = LS003
check "one below it is stale (LS001), one equal to it passes" \
	test "$(sqlstate "INSERT INTO down VALUES (3, 400)")/$(sqlstate "INSERT INTO down VALUES (4, 500)")" = LS001/ok
check "the app role may not raise a floor directly" \
	test "$(sqlstate "SELECT lease_sql_floor_raise('other-store/db', 'L', 900)")" = 42501
# A writer whose own write raised the floor, then stalled idle in its
# transaction: a higher raise ends it after takeover_timeout (500 ms), as C
# does (the SQL edition cannot read the open raise's target: it finds it in
# the lock manager), instead of waiting for its transaction. The targets
# differ above bit 32, and their low 32 bits alone would order them the
# wrong way round: the stalled lower target's are above the higher raise's,
# and then an open higher target's are below a lower raise's, which must wait
# for it, not end it. (Below this database's own epochs, bit 47 and up: the
# dump check below compares its grants with every recorded epoch.)
f0=$(((1 << 40) + 500)) f1=$(((1 << 40) + 0xFFFFFF00)) f2=$(((1 << 40) + (1 << 32) + 5))
f3=$(((1 << 40) + (2 << 32) + 1)) f4=$(((1 << 40) + (1 << 32) + 0x7FFFFFFF))
q "CREATE TABLE down_r (id int, epoch bigint)" >/dev/null
q "SELECT lease_fence('down_r', 'R', store => 'other-store/db'); SELECT lease_raise('other-store/db', 'R', $f0)" >/dev/null
q "GRANT INSERT ON down_r TO app_user" >/dev/null
# open_raise ID EPOCH SLEEP: a writer of lease_use('R', EPOCH) that raises
# the floor with row ID (ID 0: lease_raise, as a client does at the start of
# a term, and no row), then sleeps SLEEP s idle in its transaction and
# commits; its pid in $work/raise.pid once it sleeps.
open_raise()
{
	local raise="SELECT lease_use('R', $2); INSERT INTO down_r VALUES ($1, NULL);"
	[ "$1" = 0 ] && raise="SELECT lease_raise('other-store/db', 'R', $2);"
	rm -f "$work/raise.pid"
	PGUSER=app_user psql -X -q -A -t >"$work/raise.out" 2>&1 <<SQL &
BEGIN;
$raise
\o $work/raise.pid
SELECT pg_backend_pid();
\o
\! sleep $3
COMMIT;
SQL
	raiser=$!
	idle_in_transaction_pid "$work/raise.pid" >/dev/null
}
open_raise 1 "$f1" 8
raised=$(q "SELECT lease_raise('other-store/db', 'R', $f2)::text || ' ' || round(extract(epoch FROM clock_timestamp() - statement_timestamp())::numeric, 3)")
wait "$raiser" || true
check "a higher raise ends a stalled lower raise within takeover_timeout + 2.5 s ($raised s, timeout 0.5 s)" \
	python3 -c "import sys; r = '$raised'.split(); sys.exit(0 if r[0] == 'true' and float(r[1]) <= 3.0 else 1)"
check "the lower raise never committed; the floor is the higher one" \
	test "$(q "SELECT count(*) FROM down_r")/$(q "SELECT epoch FROM lease_floors WHERE name = 'R'")" = "0/$f2"
check "the eviction is recorded with the lower raise's target and pid" \
	test "$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND name = 'R' AND epoch = $f1 AND pid = $(head -1 "$work/raise.pid")")" = 1
open_raise 2 "$f3" 2
raised=$(q "SELECT lease_raise('other-store/db', 'R', $f4)")
wait "$raiser" || true
check "a lower raise waits for a higher one still open, and ends nothing" \
	test "$raised/$(q "SELECT count(*) FROM down_r WHERE id = 2")/$(q "SELECT epoch FROM lease_floors WHERE name = 'R'")/$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND name = 'R'")" = "f/1/$f3/1"
# A lease_raise that stalls idle in its transaction (issue 52, item 3): a
# higher raise ends it after takeover_timeout too, where it once waited for
# that transaction as long as it lasted. (The leaders' role is granted
# lease_raise, as docs/security.md says.)
q "GRANT EXECUTE ON FUNCTION lease_raise(text, text, bigint) TO app_user" >/dev/null
f5=$(((1 << 40) + (3 << 32) + 1)) f6=$(((1 << 40) + (3 << 32) + 2))
open_raise 0 "$f5" 8
raised=$(q "SELECT lease_raise('other-store/db', 'R', $f6)::text || ' ' || round(extract(epoch FROM clock_timestamp() - statement_timestamp())::numeric, 3)")
wait "$raiser" || true
check "a higher raise ends a stalled lease_raise within takeover_timeout + 2.5 s ($raised s, timeout 0.5 s)" \
	python3 -c "import sys; r = '$raised'.split(); sys.exit(0 if r[0] == 'true' and float(r[1]) <= 3.0 else 1)"
check "the stalled lease_raise never committed, its eviction is recorded; the floor is the higher one, its token refused (LS001)" \
	test "$(q "SELECT count(*) FROM lease_events WHERE event = 'evict' AND name = 'R' AND epoch = $f5 AND pid = $(head -1 "$work/raise.pid")")/$(q "SELECT epoch FROM lease_floors WHERE name = 'R'")/$(sqlstate "BEGIN; SELECT lease_use('R', $f5); INSERT INTO down_r VALUES (3, NULL); COMMIT;")" = "1/$f6/LS001"

# --- 5c. the fence finds its lease row and its floor through their indexes --
# (the trigger once passed the table's name, collation "C", along with the
# lease's: the lookups compared in "C" and read every row of both tables)
q "DO \$\$ BEGIN FOR i IN 1 .. 3000 LOOP PERFORM lease_acquire('many-' || i, 'h', '1 day');
	PERFORM lease_sql_floor_raise('other-store/db', 'many-' || i, 7); END LOOP; END \$\$" >/dev/null
e5c=$(as_user "SELECT epoch FROM lease_acquire('tk', 'a', '30s')")
# scans_after EPOCH WRITE: the sequential scans of both tables a fenced
# write under pg_lease.epoch = EPOCH made, or "failed". Its session then
# scans scan_sentinel and ends: once that scan is counted (up to 10 s; on
# 13 and 14 statistics travel asynchronously), so are the write's.
q "CREATE TABLE scan_sentinel (x int); GRANT SELECT ON scan_sentinel TO app_user" >/dev/null
scans() {
	q "SELECT (SELECT sum(seq_scan) FROM pg_stat_user_tables WHERE relname IN ('leases', 'lease_floor_rows'))
		|| ' ' || (SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'scan_sentinel')"
}
scans_after() {
	local before after i
	read -r -a before <<<"$(scans)"
	PGUSER=app_user psql -X -q -A -t -v ON_ERROR_STOP=1 -c "BEGIN" -c "SET LOCAL pg_lease.epoch = $1" \
		-c "$2" -c "COMMIT" -c "SELECT count(*) FROM scan_sentinel" >/dev/null 2>&1 || { echo failed; return; }
	for i in $(seq 100); do
		read -r -a after <<<"$(scans)"
		[ "${after[1]}" -gt "${before[1]}" ] && break
		sleep 0.1
	done
	[ "${after[1]}" -gt "${before[1]}" ] || { echo "not counted"; return; }
	echo $((after[0] - before[0]))
}
check "a fenced write reads neither the leases nor the floors through (3,000 rows each)" \
	test "$(scans_after "$e5c" "INSERT INTO jobs VALUES (50, 'indexed', NULL)")/$(scans_after 500 "INSERT INTO down VALUES (50, NULL)")" = 0/0

# --- 6. dump and restore into a new database: epochs never go back ---------
# pg_dump must be at least the server's major: the server's own, or the
# system's when that is new enough (the other majors' servers here come
# without one: then this part runs on 15 only, and says so).
server_major=$(q "SHOW server_version_num" | cut -c1-2)
dump=""
for d in "${PG_BIN:-}/pg_dump" "$(command -v pg_dump || true)"; do
	[ -x "$d" ] && [ "$("$d" --version | sed 's/[^0-9]*\([0-9]*\).*/\1/')" -ge "$server_major" ] && { dump=$d; break; }
done
if [ -n "$dump" ]; then
	high=$(q "SELECT max(epoch) FROM lease_events")
	PGUSER=postgres q "CREATE DATABASE app2 OWNER app_owner" >/dev/null
	"$dump" -Fc -d app -f "$work/app.dump"
	check "the dump restores into a new database as its owner" \
		"$(dirname "$dump")/pg_restore" -d app2 --no-owner "$work/app.dump"
	e8=$(PGDATABASE=app2 PGUSER=app_user q "SELECT epoch FROM lease_acquire('after-restore', 'a', '5s')")
	check "the first grant after the restore succeeds, above every restored epoch ($e8 > $high)" test "${e8:-0}" -gt "$high"
else
	echo "# dump and restore: no pg_dump for PostgreSQL $server_major here (run on 15 by the test command)"
fi

# --- 7. CREATE EXTENSION pg_lease_sql (trusted), by the owner -------------
PGUSER=postgres q "CREATE DATABASE app3 OWNER app_owner" >/dev/null
check "the database owner creates the trusted extension pg_lease_sql" \
	env PGDATABASE=app3 psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_lease_sql"
check "and sets its settings" \
	env PGDATABASE=app3 psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO lease_sql_settings VALUES ('pg_lease.max_ttl', '1min')"
check "which bind every role (a ttl above them: 22023)" \
	test "$(PGDATABASE=app3 sqlstate "SELECT lease_acquire('x', 'a', '2min')")" = 22023
e9=$(PGDATABASE=app3 as_user "SELECT epoch FROM lease_acquire('x', 'a', '30s')")
PGDATABASE=app3 q "CREATE TABLE t (id int, epoch bigint); SELECT lease_fence('t', 'x'); GRANT INSERT ON t TO app_user" >/dev/null
check "its fence passes the current epoch and refuses no token" \
	test "$(PGDATABASE=app3 sqlstate "INSERT INTO t VALUES (1, $e9)")/$(PGDATABASE=app3 sqlstate "INSERT INTO t VALUES (2, NULL)")" = ok/LS003

finish
