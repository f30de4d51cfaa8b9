#!/usr/bin/env bash
# pglease status --group: the members and shards of a lease group, as a
# table and as JSON, from the lease_group_* views (extension 1.2).
source "$(dirname "$0")/lib.sh"

group="$(unique group)/a'b%c"
json_check() { python3 -c "import json,sys; d=json.load(sys.stdin); $1" || fail "JSON check failed: $1"; }
# The lease names a group_member uses (client/include/pglease/internal/group_names.hpp).
esc=${group//%/%25}
esc=${esc//\//%2F}
prefix="pglease:group/$esc"
acquire() { "$PGLEASE" acquire "$1" --identity "$2" --ttl "$3"; }

acquire "$prefix/member/1/worker-a" worker-a 30s >/dev/null
acquire "$prefix/member/2/worker-b" worker-b 30s >/dev/null
e0=$(acquire "$prefix/shard/orders/0" worker-a 30s)
acquire "$prefix/shard/orders/10" worker-b 30s >/dev/null
acquire "$prefix/shard/orders/2" worker-b 30s >/dev/null
e9=$(acquire "$prefix/shard/orders/9" worker-a 30s)
"$PGLEASE" release "$prefix/shard/orders/9" --identity worker-a --epoch "$e9"

"$PGLEASE" status --group "$group" >"$TMP/group.txt" || fail "status --group failed"
cat "$TMP/group.txt"
grep -qF "group $group: 2 live members, 4 shards (3 held, 1 free or expired)" "$TMP/group.txt" ||
	fail "summary line"
grep -Eq "^worker-a +1 +live +1 " "$TMP/group.txt" || fail "member row a"
grep -Eq "^worker-b +2 +live +2 " "$TMP/group.txt" || fail "member row b"
grep -Eq "^orders/0 +worker-a +$e0 +held" "$TMP/group.txt" || fail "shard row"
grep -Eq "^orders/9 +- +$e9 +free" "$TMP/group.txt" || fail "free shard row"
# shards in natural order: 0, 2, 9, 10
[ "$(grep -Eo '^orders/[0-9]+' "$TMP/group.txt" | tr '\n' ' ')" = "orders/0 orders/2 orders/9 orders/10 " ] ||
	fail "shards not in natural order"
pass "status --group: table"

"$PGLEASE" status --group "$group" --json | json_check "
assert d['group'] == '''$group''', d['group']
m = {x['member']: x for x in d['members']}
assert m['worker-a']['shards'] == 1 and m['worker-b']['shards'] == 2 and m['worker-b']['weight'] == 2
assert all(x['state'] == 'live' and x['valid'] for x in d['members'])
s = {x['shard']: x for x in d['shards']}
assert s['orders/0']['holder'] == 'worker-a' and s['orders/0']['epoch'] == $e0
assert s['orders/9']['holder'] is None and s['orders/9']['state'] == 'free'
assert d['held'] == 3 and d['free'] == 1"
pass "status --group --json"

expect_rc 1 "$PGLEASE" status --group "$(unique nosuch)"
expect_rc 2 "$PGLEASE" status somename --group "$group"
pass "unknown group: 1; NAME with --group: 2"
