#!/usr/bin/env bash
# pglease status over many leases: --prefix lists only the leases of a
# prefix, --summary counts them by state and holder (table and JSON), and
# the usage errors of mixing them with NAME or --group.
source "$(dirname "$0")/lib.sh"

p=$(unique many)
json_check() { python3 -c "import json,sys; d=json.load(sys.stdin); $1" || fail "JSON check failed: $1"; }

# 3 leases held by h1, 1 by h2, 1 expired (h2's), 1 released (free), and
# one outside the prefix.
granted=$(date +%s%3N) # h1's grants are 60 s from no earlier than this
sql "SELECT (lease_acquire('$p/' || i, 'h1', '1 minute')).acquired FROM generate_series(1, 3) i" >/dev/null
sql "SELECT lease_acquire('$p/4', 'h2', '1 minute')" >/dev/null
sql "SELECT lease_acquire('$p/5', 'h2', '100 milliseconds')" >/dev/null
e6=$(sql "SELECT epoch FROM lease_acquire('$p/6', 'h3', '1 minute')")
sql "SELECT lease_release('$p/6', 'h3', $e6)" >/dev/null
sql "SELECT lease_acquire('${p}x/1', 'h9', '1 minute')" >/dev/null
# the observation is repeated, not only its comparison
expired() { test "$(sql "SELECT valid FROM lease_status WHERE name = '$1'")" = f; }
wait_until 5 expired "$p/5" || fail "$p/5 did not expire"

# 1. --prefix: the table has exactly our six leases ("$p/", not "${p}x/1").
"$PGLEASE" status --prefix "$p/" >"$TMP/prefix.txt"
[ "$(grep -c "^$p/" "$TMP/prefix.txt")" -eq 6 ] || { cat "$TMP/prefix.txt"; fail "--prefix rows"; }
grep -q "${p}x" "$TMP/prefix.txt" && fail "--prefix listed a lease outside the prefix"
grep -qE "^$p/5 +h2 +[0-9]+ +expired" "$TMP/prefix.txt" || { cat "$TMP/prefix.txt"; fail "expired row"; }
"$PGLEASE" status --prefix "$p/" --json | json_check "
assert [r['name'] for r in d] == ['$p/%d' % i for i in range(1, 7)], d
assert [r['state'] for r in d] == ['held', 'held', 'held', 'held', 'expired', 'free'], d"
"$PGLEASE" status --prefix "$(unique nosuch)" | grep -qx "(no leases)" || fail "--prefix with no match"
pass "status --prefix: table and JSON"

# 2. --summary: counts by state, then by holder.
"$PGLEASE" status --summary --prefix "$p/" >"$TMP/summary.txt"
grep -qE "^6 +4 +1 +1 +2$" "$TMP/summary.txt" || { cat "$TMP/summary.txt"; fail "summary totals"; }
grep -qE "^h1 +3 +0 +[0-9.]+s$" "$TMP/summary.txt" || { cat "$TMP/summary.txt"; fail "summary h1"; }
grep -qE "^h2 +1 +1 +[0-9.]+s$" "$TMP/summary.txt" || { cat "$TMP/summary.txt"; fail "summary h2"; }
"$PGLEASE" status --summary --prefix "$p/" --json >"$TMP/summary.json"
# What is left of h1's grants: 60 s less at most the time since they began
# (a fixed "over 50 s" failed on a loaded machine, 13 s after the grants).
floor=$((60000 - ($(date +%s%3N) - granted) - 100))
json_check "
assert (d['leases'], d['held'], d['expired'], d['free']) == (6, 4, 1, 1), d
h = {x['holder']: x for x in d['holders']}
assert sorted(h) == ['h1', 'h2'], d
assert h['h1']['held'] == 3 and $floor < h['h1']['min_remaining_ms'] <= 60000, d
assert h['h2']['held'] == 1 and h['h2']['expired'] == 1, d" <"$TMP/summary.json"
# Over every lease: at least ours, and the totals add up.
"$PGLEASE" status --summary --json | json_check "
assert d['leases'] >= 7 and d['leases'] == d['held'] + d['expired'] + d['free'], d
assert sum(x['held'] for x in d['holders']) == d['held'], d"
pass "status --summary: table and JSON"

# 3. Usage errors: 2.
expect_rc 2 "$PGLEASE" status "$p/1" --summary
expect_rc 2 "$PGLEASE" status "$p/1" --prefix "$p/"
expect_rc 2 "$PGLEASE" status --group g --summary
pass "status: NAME or --group with --prefix/--summary is a usage error"

# 4. --server: the edition this run installed (PGLEASE_SQL_EDITION: the SQL
# edition by psql -f; else the C extension), as the catalogs say.
want=pg_lease ext=True
[ -n "${PGLEASE_SQL_EDITION:-}" ] && want=pg_lease_sql ext=False
schema=$(sql "SELECT relnamespace::regnamespace FROM pg_class WHERE oid = 'lease_status'::regclass")
if [ "$want" = pg_lease ]; then
	version=$(sql "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")
else
	version=$(sql "SELECT lease_sql_version()")
fi
[ -n "$version" ] || fail "no version to compare with"
"$PGLEASE" status --server >"$TMP/server.txt"
grep -qE "^$want +${version//./\\.} +$schema +(extension|psql -f)" "$TMP/server.txt" ||
	{ cat "$TMP/server.txt"; fail "status --server table"; }
"$PGLEASE" status --server --json | json_check "
assert d['edition'] == '$want' and d['version'] == '$version' and d['schema'] == '$schema', d
assert d['extension'] is $ext, d
assert d['server_version'] == '$(sql "SHOW server_version")', d
assert d['server_version_num'] == $(sql "SHOW server_version_num"), d
assert d['preloaded'] in (True, False, None) and (d['preloaded'] is False or '$want' == 'pg_lease'), d"
db=$(unique noext)
sql "CREATE DATABASE $db" >/dev/null
rc=0
"$PGLEASE" -d "$db" status --server 2>"$TMP/noext.err" || rc=$?
sql "DROP DATABASE $db" >/dev/null
[ "$rc" -eq 1 ] && grep -q "pg_lease is not installed" "$TMP/noext.err" ||
	{ cat "$TMP/noext.err"; fail "status --server without pg_lease: rc $rc"; }
expect_rc 2 "$PGLEASE" status --server --summary
expect_rc 2 "$PGLEASE" status "$p/1" --server
pass "status --server: edition $want $version in $schema, table and JSON; none installed: exit 1"
