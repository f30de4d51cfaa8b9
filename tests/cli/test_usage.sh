#!/usr/bin/env bash
# Usage errors exit 2 (bad durations, unknown flags, missing arguments);
# --help works for every subcommand. No server needed for these.
source "$(dirname "$0")/lib.sh"

expect_rc 2 "$PGLEASE"
expect_rc 2 "$PGLEASE" --frob status
expect_rc 2 "$PGLEASE" frob
for d in 5 5x -1s 1.s "1 s" 400d ""; do
	expect_rc 2 "$PGLEASE" run --lease x --ttl "$d" -- true
done
expect_rc 2 "$PGLEASE" run --lease x --ttl 100ms -- true
expect_rc 2 "$PGLEASE" run --lease x --ttl 3s --kill-after 2s -- true
expect_rc 2 "$PGLEASE" run --lease x --kill-after soon -- true
expect_rc 2 "$PGLEASE" acquire x --identity me --ttl 10
expect_rc 2 "$PGLEASE" acquire x --identity me --wait forever
expect_rc 2 "$PGLEASE" renew x --identity me --epoch 1 --ttl 1y
pass "bad durations: 2"

expect_rc 2 "$PGLEASE" run --lease x --frob -- true
expect_rc 2 "$PGLEASE" run --lease x
expect_rc 2 "$PGLEASE" run -- true
expect_rc 2 "$PGLEASE" status --frob
expect_rc 2 "$PGLEASE" watch --jsn
expect_rc 2 "$PGLEASE" acquire x
expect_rc 2 "$PGLEASE" renew x --identity me
expect_rc 2 "$PGLEASE" release x --identity me --epoch abc
expect_rc 2 "$PGLEASE" fence t
expect_rc 2 "$PGLEASE" unfence
expect_rc 2 "$PGLEASE" -d "host=x port" status
pass "unknown flags and missing arguments: 2"

for sub in run status watch acquire renew release revoke fence unfence; do
	"$PGLEASE" "$sub" --help >"$TMP/help" || fail "$sub --help exited $?"
	grep -q "Usage" "$TMP/help" || fail "$sub --help printed no usage"
done
"$PGLEASE" --help | grep -q "Exit codes" || fail "--help does not list the exit codes"
pass "--help for every subcommand"
