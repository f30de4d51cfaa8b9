#!/usr/bin/env bash
# `pglease run` when the store is not there (issue 16), on a cluster of its
# own that the test stops and starts:
#  1. started while no server answers, it retries with backoff and runs the
#     job once the server is up (no exit 1 at once);
#  2. the retrying is bounded by --connect-timeout (exit 1, "giving up"),
#     and --connect-timeout 0s gives up at the first failure;
#  3. what is not a connection failure (no pg_lease in the database) fails
#     at once, whatever --connect-timeout says;
#  4. a multi-host string reaches the live host when the first one is down;
#  5. store down while leading: the job is killed and pglease exits 76 no
#     later than the local deadline (never leading past it), then a new
#     `pglease run` started during the outage waits and leads once the
#     server is back.
set -euo pipefail
: "${PGLEASE:?PGLEASE must name the pglease binary}"
source "$(dirname "$0")/../harness/pg_cluster.sh"

TMP=$(mktemp -d /tmp/pglease_connect_test.XXXXXX)
chmod 0777 "$TMP"
BG=()
cleanup()
{
	local p
	for p in "${BG[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
	pg_cluster_stop_all
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
running() { kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1")" != Z ]; }
# wait_exit PID SECONDS: sets RC; fails if PID still runs after SECONDS.
wait_exit()
{
	local end=$(($(now_ms) + $2 * 1000))
	while running "$1"; do
		[ "$(now_ms)" -lt "$end" ] || fail "process $1 still running after $2 s"
		sleep 0.05
	done
	RC=0
	wait "$1" || RC=$?
}

pg_cluster_init store
port=$(cat "$(pg_cluster_dir store)/port")
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres PGCONNECT_TIMEOUT=2

# 1. No server yet: pglease waits, then runs the job once it is up.
"$PGLEASE" run --lease c1 --ttl 2s --connect-timeout 60s -- sh -c "echo \$PGLEASE_EPOCH > $TMP/c1.epoch" 2>"$TMP/c1.err" &
pid=$!
BG+=("$pid")
sleep 2
running "$pid" || { cat "$TMP/c1.err" >&2; fail "pglease run exited while no server answered"; }
grep -q "no server accepts the lease yet" "$TMP/c1.err" || fail "no retry message"
# The server comes up with pg_lease already there: created while it listens
# on its socket only, then restarted on TCP (else pglease may connect in
# between and meet a database without pg_lease, which fails at once: 3.)
# The edition is this run's: the SQL edition's script where one is given
# (sql_edition.cli: a server of another major may have no C library).
pg_cluster_start store "-c listen_addresses=" >/dev/null
if [ -n "${PGLEASE_SQL_EDITION:-}" ]; then
	PGHOST=$(pg_cluster_dir store) psql -X -q -v ON_ERROR_STOP=1 -f "$PGLEASE_SQL_EDITION" >/dev/null ||
		fail "the SQL edition (psql -f)"
else
	PGHOST=$(pg_cluster_dir store) psql -X -q -c "CREATE EXTENSION pg_lease" || fail "CREATE EXTENSION"
fi
pg_cluster_stop store
pg_cluster_start store >/dev/null
wait_exit "$pid" 20
[ "$RC" -eq 0 ] || { cat "$TMP/c1.err" >&2; fail "expected 0 after the server came up, got $RC"; }
[ -s "$TMP/c1.epoch" ] || fail "the job did not run"
grep -q "connected after [0-9]* failed attempt" "$TMP/c1.err" || { cat "$TMP/c1.err" >&2; fail "no 'connected after' message"; }
attempts=$(grep -c "no server accepts the lease yet" "$TMP/c1.err")
[ "$attempts" -le 15 ] || fail "$attempts attempts in ~2 s: no backoff"
pass "started with no server: $attempts attempts with backoff, then ran the job"

# 2. Bounded: --connect-timeout 1500ms, and 0s.
t0=$(now_ms)
rc=0
"$PGLEASE" -p 1 run --lease c2 --ttl 2s --connect-timeout 1500ms -- true 2>"$TMP/c2.err" || rc=$?
elapsed=$(($(now_ms) - t0))
[ "$rc" -eq 1 ] || fail "expected 1 after --connect-timeout, got $rc"
[ "$elapsed" -ge 1400 ] && [ "$elapsed" -lt 4000 ] || fail "gave up after $elapsed ms, --connect-timeout 1500ms"
grep -q "giving up after" "$TMP/c2.err" || { cat "$TMP/c2.err" >&2; fail "no 'giving up' message"; }
t0=$(now_ms)
rc=0
"$PGLEASE" -p 1 run --lease c2 --connect-timeout 0s -- true 2>/dev/null || rc=$?
elapsed=$(($(now_ms) - t0))
[ "$rc" -eq 1 ] && [ "$elapsed" -lt 1000 ] || fail "--connect-timeout 0s: rc $rc after $elapsed ms"
pass "--connect-timeout bounds the retries (1500ms: gave up after ${elapsed}ms for 0s)"

# 3. Not a connection failure: no pg_lease in this database. At once.
psql -X -q -c "CREATE DATABASE noext"
t0=$(now_ms)
rc=0
"$PGLEASE" -d noext run --lease c3 --connect-timeout 60s -- true 2>"$TMP/c3.err" || rc=$?
elapsed=$(($(now_ms) - t0))
[ "$rc" -eq 1 ] && [ "$elapsed" -lt 2000 ] || { cat "$TMP/c3.err" >&2; fail "no extension: rc $rc after $elapsed ms"; }
pass "no extension: exit 1 at once"

# 4. Multi-host: the first host is down, the second is the server.
rc=0
"$PGLEASE" -d "host=127.0.0.1,127.0.0.1 port=1,$port target_session_attrs=read-write" run --lease c4 --ttl 2s -- true 2>"$TMP/c4.err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$TMP/c4.err" >&2; fail "multi-host: got $rc"; }
pass "multi-host connection string: reached the live host"

# 5. The store goes down under a leader.
"$PGLEASE" run --lease c5 --ttl 2s --identity lead -- sh -c "echo \$\$ > $TMP/c5.pgid; exec sleep 600" 2>"$TMP/c5.err" &
pid=$!
BG+=("$pid")
end=$(($(now_ms) + 10000))
until [ -s "$TMP/c5.pgid" ]; do [ "$(now_ms)" -lt "$end" ] || fail "c5 job did not start"; sleep 0.05; done
sleep 1
stopped=$(now_ms)
pg_cluster_stop store immediate
wait_exit "$pid" 5
gone=$(($(now_ms) - stopped))
[ "$RC" -eq 76 ] || { cat "$TMP/c5.err" >&2; fail "store down: expected 76, got $RC"; }
# The last renewal was sent before the stop, so the local deadline is at most
# ttl - safety margin (1.8 s) after it; allow 300 ms for the exit itself.
[ "$gone" -le 2100 ] || { cat "$TMP/c5.err" >&2; fail "store down: pglease led on for $gone ms after the stop (ttl 2s)"; }
kill -0 -"$(cat "$TMP/c5.pgid")" 2>/dev/null && fail "the job's group survived"
pass "store down: job killed, exit 76, ${gone} ms after the stop (ttl 2s)"
# Restarted (as Restart=always would) while the store is still down: it waits.
"$PGLEASE" run --lease c5 --ttl 2s --identity next --connect-timeout 60s -- sh -c "echo \$PGLEASE_EPOCH > $TMP/c5.epoch" 2>"$TMP/c5b.err" &
pid=$!
BG+=("$pid")
sleep 1.5
running "$pid" || { cat "$TMP/c5b.err" >&2; fail "the restarted pglease run exited while the store was down"; }
pg_cluster_start store >/dev/null
wait_exit "$pid" 20
[ "$RC" -eq 0 ] || { cat "$TMP/c5b.err" >&2; fail "restarted run: expected 0, got $RC"; }
[ -s "$TMP/c5.epoch" ] || fail "restarted run: the job did not run"
pass "restarted during the outage: waited, then led once the store was back"

# 6. A commit the server acknowledges after cancelling its wait for a
#    synchronous standby (none ever answers here) is not believed: the grant
#    is committed locally but may be lost in a failover (patroni#1412).
psql -X -q -c "ALTER SYSTEM SET synchronous_standby_names = 'nobody'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
rc=0
"$PGLEASE" acquire c6 --identity a --ttl 2s >"$TMP/c6.out" 2>"$TMP/c6.err" || rc=$?
[ "$rc" -eq 1 ] || { cat "$TMP/c6.out" "$TMP/c6.err" >&2; fail "sync standby missing: acquire exited $rc (believed an unreplicated grant?)"; }
grep -q "outcome unknown" "$TMP/c6.err" || { cat "$TMP/c6.err" >&2; fail "no 'outcome unknown' message"; }
rc=0
"$PGLEASE" run --lease c6b --ttl 2s --connect-timeout 3s -- sh -c "touch $TMP/c6.ran" 2>"$TMP/c6b.err" || rc=$?
[ "$rc" -eq 1 ] && [ ! -e "$TMP/c6.ran" ] || { cat "$TMP/c6b.err" >&2; fail "sync standby missing: run exited $rc, job ran: $([ -e "$TMP/c6.ran" ] && echo yes || echo no)"; }
pass "grant acknowledged without the synchronous standby: outcome unknown, no job run"
