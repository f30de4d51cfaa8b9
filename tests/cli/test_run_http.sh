#!/usr/bin/env bash
# pglease run --http: /healthz answers 200 only while this process holds the
# lease (503 while it waits, and once it lost it), and /metrics has the
# leader gauge, epoch, renewals, renew failures, renew latency, transitions,
# and fence rejections when the server counts them.
source "$(dirname "$0")/lib.sh"

lease=$(unique http)

# http_get PORT PATH: "<status> <body>" of a GET on loopback (bash /dev/tcp).
http_get()
{
	local reply status
	exec 5<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&5
	reply=$(cat <&5)
	exec 5<&-
	status=$(head -1 <<<"$reply" | awk '{print $2}')
	echo "$status $(sed '1,/^\r*$/d' <<<"$reply")"
}
port_of() { grep -o 'on http://127.0.0.1:[0-9]*' "$1" | head -1 | sed 's/.*://'; }
has_port() { [ -n "$(port_of "$1")" ]; }
healthz_is() { [ "$(http_get "$1" /healthz | awk '{print $1}')" = "$2" ]; }

# 1. A leader and a follower, each with its own endpoint (port 0: any free one).
"$PGLEASE" run --lease "$lease" --ttl 2s --http 127.0.0.1:0 -- sleep 300 2>"$TMP/leader.err" &
leader=$!
BG_PIDS+=("$leader")
wait_until 10 lease_valid "$lease" || fail "leader did not acquire"
"$PGLEASE" run --lease "$lease" --ttl 2s --http 0 -- sleep 300 2>"$TMP/follower.err" &
follower=$!
BG_PIDS+=("$follower")
wait_until 10 has_port "$TMP/follower.err" || fail "follower serves nothing"
lport=$(port_of "$TMP/leader.err")
fport=$(port_of "$TMP/follower.err")
epoch=$(lease_epoch "$lease")

reply=$(http_get "$lport" /healthz)
[ "$reply" = "200 leading epoch $epoch" ] || fail "leader /healthz: '$reply'"
reply=$(http_get "$fport" /healthz)
[ "$reply" = "503 not leading" ] || fail "follower /healthz: '$reply'"
pass "healthz: 200 on the leader (epoch $epoch), 503 on the waiting follower"

wait_until 5 bash -c "$(declare -f http_get); http_get $lport /metrics | grep -q 'pglease_renewals_total{lease=\"$lease\"} [1-9]'" ||
	fail "no renewal counted"
metrics=$(http_get "$lport" /metrics)
for line in "pglease_leader{lease=\"$lease\"} 1" "pglease_epoch{lease=\"$lease\"} $epoch" \
	"pglease_renew_failures_total{lease=\"$lease\"} 0" "pglease_server_up{lease=\"$lease\"} 1" \
	"pglease_lease_transitions{lease=\"$lease\"} "; do
	grep -qF "$line" <<<"$metrics" || fail "leader /metrics lacks '$line'"
done
grep -q "pglease_renew_duration_seconds_bucket{lease=\"$lease\",le=\"+Inf\"} [1-9]" <<<"$metrics" ||
	fail "no renew latency observed"
grep -qF "pglease_leader{lease=\"$lease\"} 0" <<<"$(http_get "$fport" /metrics)" ||
	fail "follower's leader gauge is not 0"
pass "metrics: leader gauge, epoch, renewals, failures, latency, transitions"

# 2. The lease is revoked: the leader exits 76, the follower takes over and
#    turns 200.
"$PGLEASE" revoke "$lease"
wait_pid "$leader" 10
[ "$RC" -eq 76 ] || fail "leader exit $RC, expected 76"
wait_until 10 healthz_is "$fport" 200 || fail "follower did not turn healthy after taking over"
pass "revoked: leader exited 76; the follower now answers 200"
kill -TERM "$follower"
wait_pid "$follower" 10

# 3. Bad endpoints are usage errors.
expect_rc 2 "$PGLEASE" run --lease "$lease" --http 70000 -- true
expect_rc 2 "$PGLEASE" run --lease "$lease" --http host: -- true
pass "bad --http: exit 2"

# 4. Fence rejections, on a server that counts them (pg_lease preloaded:
#    the C edition; the SQL edition counts none). A server alone
#    (tests/majors/with_major.sh --server-only, PG_SERVER_ONLY=1: the SQL
#    edition's suites on other majors) has no pg_lease library to preload.
if [ -n "${PG_SERVER_ONLY:-}" ]; then
	pass "fence rejections by SQLSTATE: not here (C edition only; $PG_BIN is a server alone)"
	exit 0
fi
source "$(dirname "$0")/../harness/pg_cluster.sh"
trap 'cleanup; pg_cluster_stop_all' EXIT
unset PGDATABASE # a cluster of its own, with the C edition, whatever this run's server is
pg_cluster_start cli_http_counted -c shared_preload_libraries=pg_lease
psql -X -q -c "CREATE EXTENSION pg_lease" -c "CREATE TABLE t (id int, epoch bigint)" \
	-c "SELECT lease_fence('t', '$lease')" >/dev/null
"$PGLEASE" run --lease "$lease" --ttl 5s --http 0 -- sleep 300 2>"$TMP/counted.err" &
counted=$!
BG_PIDS+=("$counted")
wait_until 10 has_port "$TMP/counted.err" || fail "no endpoint"
wait_until 10 lease_valid "$lease" || fail "not acquired"
for _ in 1 2 3; do psql -X -q -c "INSERT INTO t VALUES (1, 1)" >/dev/null 2>&1 || true; done   # LS001
psql -X -q -c "INSERT INTO t VALUES (1, NULL)" >/dev/null 2>&1 || true                         # LS003
metrics=$(http_get "$(port_of "$TMP/counted.err")" /metrics)
grep -qF "pglease_fence_rejections_total{lease=\"$lease\",sqlstate=\"LS001\"} 3" <<<"$metrics" ||
	fail "LS001 rejections not seen: $(grep rejections <<<"$metrics")"
grep -qF "pglease_fence_rejections_total{lease=\"$lease\",sqlstate=\"LS003\"} 1" <<<"$metrics" ||
	fail "LS003 rejection not seen"
pass "fence rejections by SQLSTATE from lease_counters"
kill -TERM "$counted"
wait_pid "$counted" 10
