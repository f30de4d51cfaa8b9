#!/usr/bin/env bash
# NOTIFY pg_lease: one JSON payload per grant, takeover, handover, release
# and revoke
# (none for renewals), delivered at commit and never for a rollback.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

pg_cluster_start notify
q "CREATE EXTENSION pg_lease" >/dev/null

out=$(psql -X -q -A -t -v ON_ERROR_STOP=1 2>&1 <<'SQL'
LISTEN pg_lease;
SELECT 'step grant';
SELECT epoch FROM lease_acquire('n"otify', 'holder "a"', '30s') \gset
SELECT 'step renew';
SELECT lease_renew('n"otify', 'holder "a"', :epoch) IS NOT NULL;
SELECT 'step extend';
SELECT acquired FROM lease_acquire('n"otify', 'holder "a"', '30s');
SELECT 'step refused';
SELECT acquired FROM lease_acquire('n"otify', 'b', '30s');
SELECT 'step release';
SELECT lease_release('n"otify', 'holder "a"', :epoch);
SELECT 'step rollback';
BEGIN;
SELECT acquired FROM lease_acquire('n"otify', 'rolled back', '30s');
ROLLBACK;
SELECT 'step in transaction';
BEGIN;
SELECT acquired FROM lease_acquire('n"otify', 'b', '50ms');
SELECT 'before commit';
COMMIT;
SELECT pg_sleep(0.2);
SELECT 'step takeover';
SELECT acquired FROM lease_acquire('n"otify', 'c', '30s');
SELECT 'step handover';
SELECT epoch FROM lease_acquire('n"otify', 'c', '30s') \gset
SELECT lease_handover('n"otify', 'c', :epoch, 'd') IS NOT NULL;
SELECT 'step revoke';
SELECT lease_revoke('n"otify');
SELECT 'step end';
SQL
)

echo "$out" >"$PG_CLUSTER_ROOT/notify.out"
check "notifications carry the documented JSON, in order, at commit, none for renewals or rollbacks" \
	python3 - "$PG_CLUSTER_ROOT/notify.out" <<'PY'
import json, re, sys
lines = open(sys.argv[1]).read().splitlines()
step, got = None, []
for line in lines:
    if line.startswith("step "):
        step = line[5:]
    elif line == "before commit":  # the grant was made before, and is delivered after COMMIT
        step = "before commit"
    m = re.match(r'Asynchronous notification "pg_lease" with payload "(.*)" received from server process with PID \d+\.$', line)
    if m:
        got.append((step, json.loads(m.group(1))))
want = [("grant", "acquired", 'holder "a"'), ("release", "released", 'holder "a"'),
        ("before commit", "acquired", "b"), ("takeover", "takeover", "c"), ("handover", "handover", "d"),
        ("revoke", "revoked", "d")]
ok = len(got) == len(want)
epochs = []
for (step, payload), (wstep, event, holder) in zip(got, want):
    ok &= step == wstep and payload["event"] == event and payload["holder"] == holder
    ok &= payload["name"] == 'n"otify' and isinstance(payload["epoch"], int)
    ok &= set(payload) == {"event", "name", "holder", "epoch", "expires_at"}
    ok &= re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$", payload["expires_at"]) is not None
    epochs.append(payload["epoch"])
ok &= len(epochs) == 6 and epochs[0] == epochs[1] < epochs[2] < epochs[3] < epochs[4] == epochs[5]
if not ok:
    print("\n".join(lines), file=sys.stderr)
    print(got, file=sys.stderr)
sys.exit(0 if ok else 1)
PY

finish
