#!/usr/bin/env bash
# pglease status and watch: the text and JSON forms parse, and watch prints
# an event that a concurrent acquire causes, as it happens.
source "$(dirname "$0")/lib.sh"

lease=$(unique status)
json_check() { python3 -c "import json,sys; d=json.load(sys.stdin); $1" || fail "JSON check failed: $1"; }

# 1. watch --json, started before the events; --count ends it.
"$PGLEASE" watch "$lease" --json --count 2 >"$TMP/watch.out" 2>"$TMP/watch.err" &
wpid=$!
BG_PIDS+=("$wpid")
# Over all leases: other tests (ctest -j) cause events too, so no --count:
# it runs until our own event shows up, then SIGTERM ends it.
"$PGLEASE" watch >"$TMP/watch_all.out" 2>"$TMP/watch_all.err" &
apid=$!
BG_PIDS+=("$apid")
wait_until 10 grep -q "watching" "$TMP/watch.err" || fail "watch did not start"
wait_until 10 grep -q "watching" "$TMP/watch_all.err" || fail "watch (all) did not start"
epoch=$("$PGLEASE" acquire "$lease" --identity watcher-test --ttl 20s)

# 2. status while held: table and JSON.
"$PGLEASE" status >"$TMP/status.txt"
grep -q "^NAME" "$TMP/status.txt" || fail "status table has no header"
grep -E "^$lease +watcher-test +$epoch +held" "$TMP/status.txt" >/dev/null || { cat "$TMP/status.txt"; fail "status table row"; }
"$PGLEASE" status --json | json_check "
r=[x for x in d if x['name']=='$lease'][0]
assert r['holder']=='watcher-test' and r['epoch']==$epoch and r['valid'] is True and r['state']=='held'
assert 0 < r['remaining_ms'] <= 20000 and r['ttl_ms']==20000, r"
"$PGLEASE" status "$lease" --json | json_check "assert d['name']=='$lease' and d['valid'] is True and d['writers']==0"
pass "status text and --json"

# 2b. an open fenced transaction of the grant counts as a writer (lease_writers).
psql -X -q -A -t -c "BEGIN" -c "SELECT lease_use('$lease', $epoch)" -c "SELECT pg_sleep(5)" -c "COMMIT" >/dev/null 2>&1 &
writer=$!
BG_PIDS+=("$writer")
wait_until 10 sh -c "\"$PGLEASE\" status '$lease' --json | grep -q '\"writers\":1'" || fail "status shows no open writer"
grep -E "^$lease +watcher-test +$epoch +held +1 " <<<"$("$PGLEASE" status)" >/dev/null || fail "status table: WRITERS column"
wait_pid "$writer" 20
pass "status counts the open fenced transactions of the grant"

"$PGLEASE" release "$lease" --identity watcher-test --epoch "$epoch"
"$PGLEASE" status "$lease" --json | json_check "assert d['holder'] is None and d['valid'] is False and d['state']=='free'"
expect_rc 1 "$PGLEASE" status "$(unique nosuch)"
pass "status after release; unknown lease: 1"

# 3. watch printed both events, one JSON object per line, and exited.
wait_pid "$wpid" 10
[ "$RC" -eq 0 ] || fail "watch exited $RC"
[ "$(wc -l <"$TMP/watch.out")" -eq 2 ] || { cat "$TMP/watch.out"; fail "watch printed $(wc -l <"$TMP/watch.out") lines"; }
sed -n 1p "$TMP/watch.out" | json_check "assert d['event']=='acquired' and d['name']=='$lease' and d['holder']=='watcher-test' and d['epoch']==$epoch and d['expires_at'] and d['received_at']"
sed -n 2p "$TMP/watch.out" | json_check "assert d['event']=='released' and d['epoch']==$epoch"
wait_until 10 grep -qE "acquired +$lease +holder=watcher-test +epoch=$epoch" "$TMP/watch_all.out" || { cat "$TMP/watch_all.out"; fail "watch text line"; }
wait_until 10 grep -qE "released +$lease " "$TMP/watch_all.out" || { cat "$TMP/watch_all.out"; fail "watch text line (release)"; }
kill -TERM "$apid"
wait_pid "$apid" 5
[ "$RC" -eq 0 ] || fail "watch (all) exited $RC"
pass "watch --json and text: events as they happen"

# 4. watch ends cleanly on SIGTERM.
"$PGLEASE" watch >/dev/null 2>"$TMP/watch3.err" &
pid=$!
BG_PIDS+=("$pid")
wait_until 10 grep -q "watching" "$TMP/watch3.err" || fail "watch did not start"
kill -TERM "$pid"
wait_pid "$pid" 5
[ "$RC" -eq 0 ] || fail "watch exited $RC on SIGTERM"
pass "watch exits 0 on SIGTERM"
