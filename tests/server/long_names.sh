#!/usr/bin/env bash
# Long names (issue 27, item 2), the per-server structures that
# regress/sql/long_names.sql cannot reach: with pg_lease preloaded, the
# lease counters (shared memory) and the notifications (the notifier's
# queue) of two 255-byte names that share 254 bytes, and of a third name
# that is the first 254 of them, are never confused.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

pg_cluster_start longnames -c shared_preload_libraries=pg_lease
q "CREATE EXTENSION pg_lease" >/dev/null
q "CREATE TABLE ln_a (id int, epoch bigint)" >/dev/null
q "CREATE TABLE ln_b (id int, epoch bigint)" >/dev/null

prefix=$(printf 'p%.0s' $(seq 200))
la=${prefix}$(printf 'a%.0s' $(seq 55))
lb=${prefix}$(printf 'a%.0s' $(seq 54))b
ld=${prefix}$(printf 'a%.0s' $(seq 54))
check "the names are 255, 255 and 254 bytes" \
	test "${#la} ${#lb} ${#ld}" = "255 255 254"
q "SELECT lease_fence('ln_a', '$la')" >/dev/null
q "SELECT lease_fence('ln_b', '$lb')" >/dev/null

waits=$(for _ in $(seq 30); do echo "SELECT pg_sleep(0.1);"; done)
out=$( (cat <<'SQL'
LISTEN pg_lease;
SELECT epoch AS ea FROM lease_acquire(:'la', 'holder-a', '30s') \gset
SELECT epoch AS eb FROM lease_acquire(:'lb', 'holder-b', '30s') \gset
SELECT epoch AS ed FROM lease_acquire(:'ld', 'holder-d', '30s') \gset
SELECT lease_renew(:'la', 'holder-a', :ea) IS NOT NULL;
SELECT lease_renew(:'la', 'holder-a', :ea) IS NOT NULL;
SELECT lease_renew(:'lb', 'holder-b', :eb) IS NOT NULL;
SELECT lease_release(:'lb', 'holder-b', :eb);
SELECT lease_revoke(:'ld');
SELECT 'step end';
SQL
	echo "$waits") | psql -X -q -A -t -v ON_ERROR_STOP=1 -v la="$la" -v lb="$lb" -v ld="$ld" 2>&1)
# (The notifier worker sends after commit; psql prints what arrived after
# each statement, so the session ends with 3 s of short statements.)
echo "$out" >"$PG_CLUSTER_ROOT/long_names.out"
# Each notification names its lease whole, in order.
check "notifications name each 255-byte lease whole, in order" \
	python3 - "$PG_CLUSTER_ROOT/long_names.out" "$la" "$lb" "$ld" <<'PY'
import json, re, sys
la, lb, ld = sys.argv[2:5]
got = []
for line in open(sys.argv[1]).read().splitlines():
    m = re.match(r'Asynchronous notification "pg_lease" with payload "(.*)" received from server process with PID \d+\.$', line)
    if m:
        p = json.loads(m.group(1))
        got.append((p["event"], p["name"], p["holder"]))
want = [("acquired", la, "holder-a"), ("acquired", lb, "holder-b"), ("acquired", ld, "holder-d"),
        ("released", lb, "holder-b"), ("revoked", ld, "holder-d")]
if got != want:
    print("got:", [(e, len(n), n[-3:], h) for e, n, h in got], file=sys.stderr)
    print("want:", [(e, len(n), n[-3:], h) for e, n, h in want], file=sys.stderr)
    sys.exit(1)
PY

# Refused writes, counted per lease: la's token on lb's table (stale for
# lb: LS001, counted for lb), no token on la's table (LS003, for la).
ea=$(q "SELECT epoch FROM leases WHERE name = '$la'")
for sql in "INSERT INTO ln_b VALUES (1, $ea)" "INSERT INTO ln_b VALUES (2, $ea)" "INSERT INTO ln_a VALUES (3, NULL)"; do
	psql -X -q -c "$sql" >/dev/null 2>&1 || true
done
counters=$(q "SELECT CASE name WHEN '$la' THEN 'la' WHEN '$lb' THEN 'lb' WHEN '$ld' THEN 'ld' ELSE 'other' END
	|| ' ' || grants || ' ' || renewals || ' ' || releases || ' ' || revocations
	|| ' ' || rejected_stale || ' ' || rejected_not_held || ' ' || rejected_no_token
	FROM lease_counters ORDER BY 1")
echo "$counters" >"$PG_CLUSTER_ROOT/long_names.counters"
# la: 1 grant, 2 renewals, 1 write without a token; lb: 1 grant, 1
# renewal, 1 release, 2 writes refused as stale (la's token is not lb's
# epoch); ld: 1 grant, 1 revoke.
check "lease_counters keeps one row per long name, each with its own counts" \
	test "$counters" = "la 1 2 0 0 0 0 1
lb 1 1 1 0 2 0 0
ld 1 0 0 1 0 0 0"
if [ "$TESTS_FAILED" -gt 0 ]; then
	echo "counters:"; cat "$PG_CLUSTER_ROOT/long_names.counters"
fi
finish
