#!/usr/bin/env bash
# Fencing through pgbouncer in transaction pooling mode: lease_use and
# SET LOCAL pg_lease.epoch (run_fenced's form) work, tokens never leak to
# the next transaction on the same server connection, PGOPTIONS is refused
# loudly rather than dropped, and (given the client test binary) the
# client's waiting acquire falls back to the server-reported expiry without
# LISTEN and run_fenced's one-round-trip form fences through the pooler.
#
#   tests/server/pgbouncer.sh [path/to/pglease_integration_tests]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"
client_tests=${1:-}

pg_cluster_start bouncer_db
q "CREATE EXTENSION pg_lease; CREATE TABLE ledger (id int, epoch bigint); SELECT lease_fence('ledger', 'pool')" >/dev/null
server_port=$PGPORT

dir=$(pg_cluster_dir pgbouncer)
mkdir -p "$dir"
echo '"postgres" ""' >"$dir/userlist.txt"
stop_bouncer() { [ -f "$dir/pgbouncer.pid" ] && kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null; pg_cluster_stop_all; }
trap stop_bouncer EXIT

# start_bouncer: on a free port; false if it does not answer within 10 s
# (a port taken between choosing and binding, say), with its log shown.
start_bouncer()
{
	bouncer_port=$(pg_free_port)
	cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$server_port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer_port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
default_pool_size = 1
max_client_conn = 50
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
	[ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
	pg_as_owner pgbouncer -d "$dir/pgbouncer.ini" || true
	for _ in $(seq 1 100); do
		PGPORT=$bouncer_port q "SELECT 1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "pgbouncer did not answer on port $bouncer_port:" >&2
	tail -5 "$dir/pgbouncer.log" >&2 2>/dev/null || true
	[ -f "$dir/pgbouncer.pid" ] && kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null
	rm -f "$dir/pgbouncer.pid"
	return 1
}
started=false
for _ in 1 2 3; do
	start_bouncer && { started=true; break; }
done
$started || { echo "pgbouncer would not start" >&2; exit 1; }
export PGPORT=$bouncer_port

epoch=$(q "SELECT epoch FROM lease_acquire('pool', 'leader', '1h')")
check "lease_use in a transaction passes through the pooler" \
	q "BEGIN; SELECT lease_use('pool', $epoch); INSERT INTO ledger VALUES (1, NULL); COMMIT;"
check "SET LOCAL pg_lease.epoch in a transaction passes through the pooler" \
	q "BEGIN; SET LOCAL pg_lease.epoch = '$epoch'; INSERT INTO ledger VALUES (2, NULL); COMMIT;"
# one server connection serves every client: a token must not outlive its transaction
q "BEGIN; SELECT lease_use('pool', $epoch); INSERT INTO ledger VALUES (3, NULL); COMMIT;" >/dev/null
refused=$(q "INSERT INTO ledger VALUES (4, NULL)" 2>&1 || true)
check "the next client on the same server connection carries no token (LS003)" \
	grep -q "carries no fencing token" <<<"$refused"
# the client's run_fenced (its fenced block) declares its token this way, in its BEGIN
q "BEGIN; SET LOCAL pg_lease.epoch = '$epoch'; INSERT INTO ledger VALUES (6, NULL); COMMIT;" >/dev/null
refused=$(q "INSERT INTO ledger VALUES (7, NULL)" 2>&1 || true)
check "after SET LOCAL pg_lease.epoch the next client carries no token (LS003)" \
	grep -q "carries no fencing token" <<<"$refused"
check "the writes were stamped with the epoch" \
	test "$(q "SELECT count(*) FROM ledger WHERE epoch = $epoch")" = 4
q "SELECT lease_revoke('pool')" >/dev/null
q "SELECT epoch FROM lease_acquire('pool', 'successor', '1h')" >/dev/null
stale=$(q "BEGIN; SELECT lease_use('pool', $epoch); INSERT INTO ledger VALUES (5, NULL); COMMIT;" 2>&1 || true)
check "a stale leader is refused through the pooler (LS001)" grep -q "is stale" <<<"$stale"
stale=$(q "BEGIN; SET LOCAL pg_lease.epoch = '$epoch'; INSERT INTO ledger VALUES (8, NULL); COMMIT;" 2>&1 || true)
check "a stale leader's SET LOCAL pg_lease.epoch is refused through the pooler (LS001)" \
	grep -q "is stale" <<<"$stale"
options=$(PGOPTIONS="-c pg_lease.epoch=$epoch" q "SELECT 1" 2>&1 || true)
check "PGOPTIONS is refused by the pooler, not silently dropped" grep -qi "unsupported startup parameter" <<<"$options"

if [ -n "$client_tests" ]; then
	check "client: without LISTEN a waiting acquire wakes at the reported expiry, through the pooler" \
		"$client_tests" --gtest_brief=1 \
		--gtest_filter='pg_lease.without_listen_a_follower_wakes_at_the_reported_expiry:pg_lease.acquire_held_renew_release_round_trip:pg_lease.second_client_is_refused_and_learns_the_holder:pg_lease.fenced_writes_pass_for_the_holder_and_are_refused_once_it_is_stale'
	# run_fenced's one-round-trip form (BEGIN; SET LOCAL pg_lease.epoch):
	# passes, refuses stale and expired tokens at the first write, leaves no
	# token to the next transaction on the one server connection.
	check "client: run_fenced's one-round-trip form through the pooler" \
		"$client_tests" --gtest_brief=1 \
		--gtest_filter='pg_fenced.the_fast_form_makes_as_many_round_trips_as_a_plain_work:pg_fenced.a_stale_token_fails_the_very_first_write_and_nothing_commits:pg_fenced.an_expired_token_fails_the_very_first_write_with_ls002:pg_fenced.no_token_outlives_its_transaction_in_the_session:pg_fenced.a_value_is_returned_from_the_fast_form'
	# The client prepares its statements; on the one pooled server
	# connection a later client session finds them there already (42P05),
	# or missing, and goes on with unnamed statements: the tests above
	# passed through exactly that.
	check "client: prepared statements met the pooler and the client fell back to unnamed ones" \
		grep -qE 'prepared statement "pglease_[0-9a-f]{16}" (already exists|does not exist)' \
		"$(pg_cluster_dir bouncer_db)/server.log"
fi
finish
