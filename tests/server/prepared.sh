#!/usr/bin/env bash
# The client parses each statement once per session: pq_backend prepares
# lease_acquire, lease_renew, lease_release (and the rest) at first use and
# executes the prepared statement from then on (lease_handover and the
# read that confirms a handover, sent about once a term, go unnamed: one
# round trip, no Parse ahead).  Seen in the server's log
# (log_min_duration_statement = 0 logs every parse and every execute, with
# the statement's name: "<unnamed>" for one parsed per call).  The fallback
# to unnamed statements behind a transaction-mode pooler is checked by
# tests/server/pgbouncer.sh.
#
#   tests/server/prepared.sh path/to/pglease
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"
pglease=${1:-${PGLEASE:?usage: prepared.sh path/to/pglease (or PGLEASE=...)}}

pg_cluster_start prepared -c log_min_duration_statement=0
trap pg_cluster_stop_all EXIT
q "CREATE EXTENSION pg_lease" >/dev/null
log=$(pg_cluster_dir prepared)/server.log

# ttl 1.5 s: renewed every 0.5 s, so a few renewals in one session
"$pglease" run --lease prepared --ttl 1500ms --no-handover -- sleep 2.3
count() { grep -cE "$1" "$log" || true; }
renews=$(count 'execute pglease_[0-9a-f]{16}: .*lease_renew')
echo "# lease_renew: $(count 'parse pglease_[0-9a-f]{16}: .*lease_renew') parse(s), $renews prepared execution(s)"
check "renewals run a prepared statement" test "$renews" -ge 3
check "lease_renew is parsed once for the session" \
	test "$(count 'parse pglease_[0-9a-f]{16}: .*lease_renew')" -eq 1
check "no lease call is sent as an unnamed statement" \
	test "$(count 'execute <unnamed>: .*lease_(acquire|renew|release)')" -eq 0
check "acquire and release ran prepared too" \
	test "$(count 'execute pglease_[0-9a-f]{16}: .*lease_(acquire|release)')" -ge 2

# A handover (a second run takes the lease over from the first): the
# holder's lease_handover and the successor's confirming read go unnamed,
# one round trip each on a handover's path, never parsed ahead.
"$pglease" run --lease handed --ttl 3s -- sleep 60 &
holder=$!
for _ in $(seq 100); do # 10 s
	[ "$(q "SELECT holder IS NOT NULL FROM leases WHERE name = 'handed'")" = t ] && break
	sleep 0.1
done
timeout 30 "$pglease" run --lease handed --ttl 3s --take-over -- true
rc=0
timeout 30 tail --pid="$holder" -f /dev/null || rc=$?
kill "$holder" 2>/dev/null || true
check "the holder stopped once it had handed the lease over" test "$rc" -eq 0
check "lease_handover was sent unnamed" test "$(count 'execute <unnamed>: .*lease_handover')" -ge 1
check "lease_handover is never parsed ahead" test "$(count 'parse pglease_[0-9a-f]{16}: .*lease_handover')" -eq 0
check "the successor's confirming read was sent unnamed" \
	test "$(count 'execute <unnamed>: SELECT name, coalesce.*synchronous_standby_names')" -ge 1
check "the confirming read is never parsed ahead" \
	test "$(count 'parse pglease_[0-9a-f]{16}: .*synchronous_standby_names')" -eq 0
finish
