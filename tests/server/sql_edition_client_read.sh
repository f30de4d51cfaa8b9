#!/usr/bin/env bash
# A takeover ends a stalled writer whose backend waits on its client in the
# middle of a statement (issue 52's soak: 10 stale writes committed). A
# client stopped inside libpq's pipeline mode leaves its backend "active",
# waiting on ClientRead, after its fenced INSERT ran and before the Sync:
# PostgreSQL drops a cancel that reaches a backend reading a command, so
# cancelling it, as the SQL edition did for every backend not "idle in
# transaction", left its transaction open until the next check 250 ms later
# terminated it, and a client that woke meanwhile committed its stale
# write. Like the C edition (lease_evict.c: WAIT_EVENT_CLIENT_READ), the
# SQL edition now terminates a backend waiting on its client at once. The
# writer (tests/server/pipeline_stall.c) wakes as soon as the server logs
# its eviction, well inside the 250 ms; its write must not commit. Every
# wait is bounded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

sql_edition_cluster sql_edition_client_read
work=$PG_CLUSTER_ROOT
log=$(pg_cluster_dir sql_edition_client_read)/server.log
# libpq's headers are the system's, whatever server runs (a private or
# another major's installation has a pg_config of its own, without them).
libpq_cflags=$(pkg-config --cflags libpq 2>/dev/null || echo "-I$(/usr/bin/pg_config --includedir)")
cc -O1 -o "$work/pipeline_stall" "$here/pipeline_stall.c" $libpq_cflags -lpq
q "GRANT pg_signal_backend TO app_owner" >/dev/null
sql_edition_install
q "CREATE TABLE jobs (id int, note text, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs', 'cr')" >/dev/null
q "GRANT SELECT, INSERT ON jobs TO app_user" >/dev/null
q "INSERT INTO lease_sql_settings VALUES ('pg_lease.takeover_timeout', '500ms')" >/dev/null

# rounds 1 and 2: a writer of another role, whose state the owner may not
# see (no pg_read_all_stats): terminated; round 3: the owner's own writer,
# seen waiting on ClientRead: terminated
for round in 1 2 3; do
	role=app_user
	[ "$round" != 3 ] || role=app_owner
	rm -f "$work/go"
	e1=""
	for _ in $(seq 100); do # the last round's taker's grant (ttl 1 s) expires
		e1=$(PGUSER=$role q "SELECT epoch FROM lease_acquire('cr', 'stalled', '2s') WHERE acquired")
		[ -n "$e1" ] && break
		sleep 0.1
	done
	PGUSER=$role "$work/pipeline_stall" "$e1" jobs "$work/go" >"$work/writer.out" 2>&1 &
	writer=$!
	pid=""
	for _ in $(seq 100); do
		[ -s "$work/writer.out" ] && pid=$(head -1 "$work/writer.out") &&
			[ "$(PGUSER=postgres q "SELECT state || '/' || wait_event FROM pg_stat_activity WHERE pid = $pid")" = active/ClientRead ] && break
		sleep 0.1
	done
	check "round $round: the writer's backend ($role, $pid) is active, waiting on ClientRead, after its fenced INSERT" \
		test "$(PGUSER=postgres q "SELECT state || '/' || wait_event FROM pg_stat_activity WHERE pid = ${pid:-0}")" = active/ClientRead
	check "round $round: it holds the grant's fence lock" \
		test "$(q "SELECT count(*) FROM lease_writers WHERE name = 'cr' AND epoch = $e1 AND granted AND pid = ${pid:-0}")" = 1
	for _ in $(seq 100); do # the grant expires (ttl 2 s)
		[ "$(q "SELECT expires_at < clock_timestamp() FROM leases WHERE name = 'cr'")" = t ] && break
		sleep 0.1
	done
	seen=$(stat -c %s "$log")
	PGUSER=app_user timeout 60 psql -X -q -A -t -v ON_ERROR_STOP=1 \
		-c "SELECT epoch FROM lease_acquire('cr', 'taker-$round', '1s') WHERE acquired" >"$work/taker.out" 2>&1 &
	taker=$!
	# the writer wakes as soon as the server logs what it did to it
	for _ in $(seq 1000); do
		tail -c +$((seen + 1)) "$log" | grep -q "backend ${pid:-0}," && break
		sleep 0.01
	done
	touch "$work/go"
	line=$(tail -c +$((seen + 1)) "$log" | grep -m1 "backend ${pid:-0}," || true)
	wait "$writer" || true
	wait "$taker" || true
	check "round $round: the takeover terminated it (server log: ${line#*LOG:  })" \
		grep -q "terminating backend ${pid:-0}," <<<"$line"
	check "round $round: its write did not commit (writer: $(tail -1 "$work/writer.out"))" \
		test "$(q "SELECT count(*) FROM jobs")/$(tail -1 "$work/writer.out" | cut -c1-7)" = 0/failed:
	check "round $round: the taker leads with a larger epoch ($(cat "$work/taker.out"))" \
		test "$(cat "$work/taker.out")" -gt "$e1"
done
finish
