#!/usr/bin/env bash
# Bounded takeover on a server with default settings (no
# idle_in_transaction_session_timeout, no statement_timeout): a holder that
# stalls inside an open fenced transaction does not hold the election
# hostage, and a holder's own long fenced transaction does not delay its
# renewals.  Timing bounds are generous; every wait in here is bounded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

pg_cluster_start takeover
log="$(pg_cluster_dir takeover)/server.log"
work=$PG_CLUSTER_ROOT
q "CREATE EXTENSION pg_lease" >/dev/null
q "CREATE TABLE jobs (id int PRIMARY KEY, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs', 'tk')" >/dev/null
q "CREATE TABLE plain (id int)" >/dev/null
q "CREATE ROLE tk_user LOGIN" >/dev/null
q "GRANT SELECT, INSERT ON jobs TO tk_user" >/dev/null

ttl=2
# now_s: the server's clock in seconds (grants are judged by it).
now_s() { q "SELECT extract(epoch FROM clock_timestamp())"; }
le() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$1" "$2"; }

# acquire_until HOLDER SECONDS: one session trying every 50 ms, as a
# follower's elector would; prints the epoch, or nothing.
acquire_until()
{
	psql -X -q -A -t -v ON_ERROR_STOP=1 <<SQL
DO \$\$
DECLARE
	g record;
	give_up timestamptz := clock_timestamp() + interval '$2 s';
BEGIN
	LOOP
		g := lease_acquire('tk', '$1', '${ttl}s');
		EXIT WHEN g.acquired OR clock_timestamp() > give_up;
		PERFORM pg_sleep(0.05);
	END LOOP;
	IF g.acquired THEN
		RAISE NOTICE 'granted %', g.epoch;
	END IF;
END
\$\$;
SQL
}

# stall MODE ID EPOCH: the old holder's writer, left running in the
# background ($! names it): it writes row ID under EPOCH, then stalls for 4 s
# inside the transaction, then tries to commit.  Its backend pid goes to
# $work/MODE.pid.
stall()
{
	local mode=$1 id=$2 epoch=$3 opts="" declare="" stall_sql
	case $mode in
	idle_use) declare="SELECT lease_use('tk', $epoch);"; stall_sql='\! sleep 4' ;;
	idle_setting) opts="-c pg_lease.epoch=$epoch"; stall_sql='\! sleep 4' ;;
	busy) declare="SELECT lease_use('tk', $epoch);"; stall_sql='SELECT pg_sleep(4);' ;;
	savepoint) declare="SELECT lease_use('tk', $epoch);"
		stall_sql=$'SAVEPOINT s;\nSELECT pg_sleep(4);\n\\! sleep 2\nROLLBACK TO SAVEPOINT s;' ;;
	esac
	PGOPTIONS="$opts" psql -X -q -A -t >"$work/$mode.out" 2>&1 <<SQL &
\o $work/$mode.pid
SELECT pg_backend_pid();
\o
BEGIN;
$declare
INSERT INTO jobs (id) VALUES ($id);
$stall_sql
COMMIT;
SQL
}

# writing_pid MODE: the stalled writer's pid once it has written (has an xid).
writing_pid()
{
	local pid
	for _ in $(seq 1 50); do
		pid=$(head -1 "$work/$1.pid" 2>/dev/null || true)
		if [ -n "$pid" ] && [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid AND backend_xid IS NOT NULL")" = 1 ]; then
			echo "$pid"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

fenced_insert() { q "BEGIN; SELECT lease_use('tk', $1); INSERT INTO jobs (id) VALUES ($2); COMMIT;" >/dev/null; }

# --- 1. failover behind a writer stalled in each state ----------------------
id=0
for mode in idle_use idle_setting busy savepoint; do
	id=$((id + 1))
	q "SELECT lease_revoke('tk')" >/dev/null
	read -r epoch granted_at expires_at < <(q "SELECT epoch, extract(epoch FROM clock_timestamp()), extract(epoch FROM expires_at) FROM lease_acquire('tk', 'stalled', '${ttl}s')" | tr '|' ' ')
	rm -f "$work/$mode.pid"
	stall "$mode" "$id" "$epoch"
	writer=$!
	pid=$(writing_pid "$mode" || echo 0)
	check "$mode: the stalled writer has written, inside its open transaction" test "$pid" != 0
	new_epoch=$(PGUSER=tk_user acquire_until taker 12 2>&1 | sed -n 's/.*granted //p')
	new_epoch=${new_epoch:-none}
	check "$mode: the new holder's fenced write passes" fenced_insert "${new_epoch/none/0}" $((id + 100))
	taken_at=$(q "SELECT extract(epoch FROM time) FROM lease_events WHERE name = 'tk' AND epoch = ${new_epoch/none/0} AND event = 'takeover'")
	wait "$writer" || true
	check "$mode: another holder (an unprivileged role) is granted the lease" test "$new_epoch" != none
	check "$mode: not before the stalled grant expired" le "$expires_at" "${taken_at:-0}"
	check "$mode: within ttl + 1.5 s of the stalled holder's grant ($(python3 -c "print(round(${taken_at:-1e12} - $granted_at, 3))") s, ttl $ttl s)" \
		le "${taken_at:-1e12}" "$(python3 -c "print($granted_at + $ttl + 1.5)")"
	check "$mode: the stalled transaction never committed" test "$(q "SELECT count(*) FROM jobs WHERE id = $id")" = 0
	check "$mode: the eviction is recorded with the old holder, epoch and backend pid" \
		test "$(q "SELECT count(*) FROM lease_events WHERE name = 'tk' AND event = 'evict' AND holder = 'stalled' AND epoch = $epoch AND pid = $pid")" = 1
done
check "evictions are logged" grep -q 'pg_lease: terminating backend' "$log"
check "a busy statement is cancelled first" grep -q 'pg_lease: cancelling the statement of backend' "$log"

# --- 2. the holder's own long fenced transaction never delays its renewals -
q "SELECT lease_revoke('tk')" >/dev/null
epoch=$(q "SELECT epoch FROM lease_acquire('tk', 'worker', '1s')")
psql -X -q -A -t >"$work/long.out" 2>&1 <<SQL &
BEGIN;
SELECT lease_use('tk', $epoch);
INSERT INTO jobs (id) VALUES (201);
SELECT pg_sleep(3);
INSERT INTO jobs (id) VALUES (202);
COMMIT;
SQL
long=$!
slow=0 lost=0 n=0
# Ten renewals 0.3 s apart from one session (a new psql per renewal can
# take longer than the 1 s ttl to start on a loaded machine), each timed
# on the server: the statement alone.
while IFS='|' read -r r ms; do
	n=$((n + 1))
	[ "$r" = t ] || lost=$((lost + 1))
	[ "$ms" -lt 500 ] || slow=$((slow + 1))
done < <(for _ in $(seq 1 10); do
	echo "SELECT lease_renew('tk', 'worker', $epoch) IS NOT NULL,
		(extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000)::int;"
	echo "SELECT pg_sleep(0.3) \\g /dev/null"
done | psql -X -q -A -t -v ON_ERROR_STOP=1 | grep '|')
wait "$long"
check "3 x ttl of open fenced transaction: $n renewals, none lost" test "$lost/$n" = 0/10
check "3 x ttl of open fenced transaction: every renewal under 0.5 s" test "$slow" = 0
check "the long transaction commits, its rows before and after the first expiry" \
	test "$(q "SELECT count(*) FROM jobs WHERE id IN (201, 202)")" = 2
check "the holder still holds the lease, the same grant (every renewal above found it valid)" \
	test "$(q "SELECT holder || '/' || epoch FROM leases WHERE name = 'tk'")" = "worker/$epoch"

# --- 3. who may be ended, and who never is ---------------------------------
# An unfenced transaction idle for the whole takeover, and the writer of the
# valid lease (refused acquirers never end it).
psql -X -q -A -t >"$work/bystander.out" 2>&1 <<SQL &
BEGIN;
INSERT INTO plain VALUES (1);
\! sleep 5
COMMIT;
SELECT 'bystander committed';
SQL
bystander=$!
q "SELECT lease_revoke('tk')" >/dev/null
epoch=$(q "SELECT epoch FROM lease_acquire('tk', 'valid', '4s')")
psql -X -q -A -t >"$work/valid.out" 2>&1 <<SQL &
BEGIN;
SELECT lease_use('tk', $epoch);
INSERT INTO jobs (id) VALUES (301);
\! sleep 3
COMMIT;
SELECT 'valid writer committed';
SQL
valid=$!
sleep 0.3
# Timed on the server: the refusal alone, not psql's start.
IFS='|' read -r r ms < <(PGUSER=tk_user q "SELECT acquired,
	(extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000)::int
	FROM lease_acquire('tk', 'taker', '2s')")
check "a valid lease with an open writer: another holder is refused at once ($ms ms)" test "$r" = f -a "$ms" -lt 500
wait "$valid" "$bystander"
check "the valid lease's writer is never ended by an acquire" grep -q 'valid writer committed' "$work/valid.out"
check "an unfenced transaction is never ended" grep -q 'bystander committed' "$work/bystander.out"

# --- 4. revoke is bounded the same way --------------------------------------
q "SELECT lease_revoke('tk')" >/dev/null
epoch=$(q "SELECT epoch FROM lease_acquire('tk', 'revoked', '30s')")
rm -f "$work/idle_use.pid"
stall idle_use 401 "$epoch"
writer=$!
writing_pid idle_use >/dev/null || true
start=$(date +%s%N)
r=$(q "SELECT lease_revoke('tk')")
ms=$((($(date +%s%N) - start) / 1000000))
wait "$writer" || true
check "revoke of a lease with a stalled writer returns after the takeover bound ($ms ms)" \
	test "$r" = t -a "$ms" -ge 900 -a "$ms" -lt 3000
check "the revoked grant's stalled transaction never committed" test "$(q "SELECT count(*) FROM jobs WHERE id = 401")" = 0

# --- 5. pg_lease.takeover_timeout = 0 waits as 1.0 did ----------------------
q "SELECT lease_revoke('tk')" >/dev/null
epoch=$(q "SELECT epoch FROM lease_acquire('tk', 'patient', '1s')")
psql -X -q -A -t >"$work/patient.out" 2>&1 <<SQL &
BEGIN;
SELECT lease_use('tk', $epoch);
INSERT INTO jobs (id) VALUES (501);
\! sleep 4
COMMIT;
SELECT 'patient writer committed';
SQL
patient=$!
sleep 1.5
r=$(PGOPTIONS="-c pg_lease.takeover_timeout=0 -c statement_timeout=1500" psql -X -q -A -t \
	-c "SELECT acquired FROM lease_acquire('tk', 'taker', '2s')" 2>&1 || true)
check "takeover_timeout = 0: the grant waits for the writer (statement_timeout ends the wait)" \
	grep -q 'canceling statement due to statement timeout' <<<"$r"
wait "$patient"
check "takeover_timeout = 0: the writer is not ended and commits" grep -q 'patient writer committed' "$work/patient.out"
check "takeover_timeout = 0: once it committed, the grant goes through" \
	test "$(PGOPTIONS="-c pg_lease.takeover_timeout=0" q "SELECT acquired FROM lease_acquire('tk', 'taker', '2s')")" = t

# --- 6. a prepared transaction cannot be ended: the grant fails, bounded ----
q "SELECT lease_revoke('tk')" >/dev/null
epoch=$(q "SELECT epoch FROM lease_acquire('tk', 'prepared', '1s')")
q "BEGIN; SELECT lease_use('tk', $epoch); INSERT INTO jobs (id) VALUES (601); PREPARE TRANSACTION 'tk_prepared';" >/dev/null
sleep 1.2
start=$(date +%s%N)
r=$(psql -X -q -A -t -v VERBOSITY=verbose -c "SELECT acquired FROM lease_acquire('tk', 'taker', '2s')" 2>&1 || true)
ms=$((($(date +%s%N) - start) / 1000000))
check "a prepared transaction holding the fence: 55P03 after the bound ($ms ms)" \
	grep -q '55P03' <<<"$r"
check "... within takeover_timeout + 5 s + margin" test "$ms" -lt 8000
q "ROLLBACK PREPARED 'tk_prepared'" >/dev/null
check "after ROLLBACK PREPARED the grant goes through" \
	test "$(q "SELECT acquired FROM lease_acquire('tk', 'taker', '2s')")" = t

finish
