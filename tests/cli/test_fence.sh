#!/usr/bin/env bash
# pglease fence/unfence: a fenced table refuses writes without the token and
# takes them from `pglease run` (PGOPTIONS); unfence removes the fence.
source "$(dirname "$0")/lib.sh"

lease=$(unique fence)
table=$(unique fence_t)
sql "CREATE TABLE $table (id int, epoch bigint, token bigint)" >/dev/null
trap 'sql "DROP TABLE IF EXISTS $table" >/dev/null 2>&1 || true; cleanup' EXIT

"$PGLEASE" fence "$table" --lease "$lease" 2>/dev/null
psql -X -q -v VERBOSITY=sqlstate -c "INSERT INTO $table (id) VALUES (1)" 2>"$TMP/err" && fail "unfenced insert passed"
grep -q LS003 "$TMP/err" || { cat "$TMP/err"; fail "expected LS003"; }
"$PGLEASE" -q run --lease "$lease" --ttl 2s -- psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO $table (id) VALUES (2)" ||
	fail "the insert under pglease run was refused"
[ "$(sql "SELECT epoch FROM $table WHERE id = 2")" = "$(lease_epoch "$lease")" ] || fail "epoch not stamped"
pass "fence: no token refused (LS003), pglease run's job writes with its epoch"

"$PGLEASE" -q unfence "$table"
psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO $table (id) VALUES (3)" || fail "insert refused after unfence"
pass "unfence"

"$PGLEASE" -q fence "$table" --lease "$lease" --column token
"$PGLEASE" -q run --lease "$lease" --ttl 2s -- psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO $table (id) VALUES (4)"
[ "$(sql "SELECT token FROM $table WHERE id = 4")" = "$(lease_epoch "$lease")" ] || fail "--column not used"
"$PGLEASE" -q unfence "$table"
pass "fence --column"

expect_rc 1 "$PGLEASE" fence "$(unique nosuch)" --lease "$lease" 2>"$TMP/err"
grep -q "SQLSTATE 42P01" "$TMP/err" || { cat "$TMP/err"; fail "no SQLSTATE 42P01"; }
expect_rc 1 "$PGLEASE" fence "$table" --lease "$lease" --column id 2>"$TMP/err"
grep -q "SQLSTATE 22023" "$TMP/err" || { cat "$TMP/err"; fail "no SQLSTATE 22023 for a non-bigint column"; }
pass "fence errors: 1 with the SQLSTATE"
