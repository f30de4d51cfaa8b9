#!/usr/bin/env bash
# pglease acquire/renew/release/revoke for scripts: acquire prints the epoch,
# 75 when held elsewhere; renew/release of a grant that is not yours: 76.
source "$(dirname "$0")/lib.sh"

lease=$(unique prim)

# A minute's grant: the holder's second acquire below must find it unexpired
# (10 s ran out before it on a loaded machine, and a new epoch is lawful then).
e1=$("$PGLEASE" acquire "$lease" --identity a --ttl 1m)
[[ "$e1" =~ ^[0-9]+$ ]] || fail "acquire printed '$e1'"
expect_rc 75 "$PGLEASE" acquire "$lease" --identity b --ttl 10s
{ "$PGLEASE" acquire --lease "$lease" --identity b --json 2>/dev/null || true; } | python3 -c "
import json,sys; d=json.load(sys.stdin)
assert d['acquired'] is False and d['holder']=='a' and d['epoch'] is None and d['remaining_ms']>0, d" ||
	fail "acquire --json while held"
[ "$("$PGLEASE" acquire "$lease" --identity a --ttl 1m)" = "$e1" ] || fail "re-acquire by the holder changed the epoch"
pass "acquire: epoch, 75 when held elsewhere, same epoch for the holder"

expect_rc 0 "$PGLEASE" renew "$lease" --identity a --epoch "$e1"
expect_rc 0 "$PGLEASE" renew "$lease" --identity a --epoch "$e1" --ttl 2m
[ "$(sql "SELECT extract(epoch FROM ttl)::int FROM leases WHERE name = '$lease'")" = 120 ] || fail "renew --ttl"
expect_rc 0 "$PGLEASE" renew "$lease" --identity a --epoch "$e1"
[ "$(sql "SELECT extract(epoch FROM ttl)::int FROM leases WHERE name = '$lease'")" = 120 ] || fail "renew without --ttl changed the ttl"
expect_rc 76 "$PGLEASE" renew "$lease" --identity b --epoch "$e1"
expect_rc 76 "$PGLEASE" renew "$lease" --identity a --epoch $((e1 + 1000))
pass "renew: 0, keeps the ttl, 76 when not yours"

expect_rc 76 "$PGLEASE" release "$lease" --identity b --epoch "$e1"
expect_rc 0 "$PGLEASE" release "$lease" --identity a --epoch "$e1"
expect_rc 76 "$PGLEASE" release "$lease" --identity a --epoch "$e1"
[ "$(lease_holder "$lease")" = "" ] || fail "release did not free the lease"
pass "release: 0, then 76"

# A 2 s grant (a 1 s one was answered after its local deadline on a loaded
# machine): --wait takes the lease at its expiry, well before its own 10 s.
e2=$("$PGLEASE" acquire "$lease" --identity b --ttl 2s)
[ "$e2" -gt "$e1" ] || fail "epoch did not grow"
start=$(date +%s%N)
e3=$("$PGLEASE" acquire "$lease" --identity c --wait 10s)
[ "$e3" -gt "$e2" ] || fail "acquire --wait epoch did not grow"
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 7000 ] || fail "acquire --wait took too long"
expect_rc 0 "$PGLEASE" revoke "$lease"
[ "$(lease_holder "$lease")" = "" ] || fail "revoke did not free the lease"
expect_rc 0 "$PGLEASE" -q revoke "$lease"
expect_rc 76 "$PGLEASE" renew "$lease" --identity c --epoch "$e3"
pass "acquire --wait, revoke"

# --lock-delay is recorded with the grant: once it is lost without release,
# another holder gets 75 until the delay has passed.
ld=$(unique lockdelay)
"$PGLEASE" acquire "$ld" --identity a --ttl 2s --lock-delay 30s >/dev/null || fail "acquire --lock-delay"
[ "$(sql "SELECT extract(epoch FROM lock_delay)::int FROM leases WHERE name = '$ld'")" = 30 ] ||
	fail "acquire --lock-delay was not recorded"
for _ in $(seq 200); do lease_valid "$ld" || break; sleep 0.05; done
! lease_valid "$ld" || fail "the 2s grant did not expire"
expect_rc 75 "$PGLEASE" acquire "$ld" --identity b --ttl 10s
expect_rc 2 "$PGLEASE" acquire "$ld" --identity b --lock-delay -1s
pass "acquire --lock-delay: recorded, keeps others out after expiry"

# Errors from the server come with their SQLSTATE, on stderr, exit 1.
expect_rc 1 "$PGLEASE" acquire "$lease" --identity a --ttl 2d 2>"$TMP/err"
grep -q "SQLSTATE 22023" "$TMP/err" || { cat "$TMP/err"; fail "no SQLSTATE in the error"; }
expect_rc 1 "$PGLEASE" -h 127.0.0.1 -p 1 status 2>"$TMP/err"
grep -qi "connect\|connection" "$TMP/err" || { cat "$TMP/err"; fail "no connection error message"; }
expect_rc 1 "$PGLEASE" -d "postgresql://127.0.0.1:1/postgres" status 2>/dev/null
pass "server errors: 1 with SQLSTATE; no server: 1"
