#!/usr/bin/env bash
# lease_counters: per-lease counters in shared memory, with pg_lease in
# shared_preload_libraries; a clear error without it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

# --- without shared_preload_libraries: a clear error -------------------------
pg_cluster_start plain
q "CREATE EXTENSION pg_lease" >/dev/null
out=$(psql -X -q -v VERBOSITY=verbose -c "SELECT * FROM lease_counters" 2>&1 || true)
check "not preloaded: 55000 and a hint to preload" \
	grep -q "55000.*pg_lease counters are not enabled" <<<"$out"
check "... the hint names shared_preload_libraries" grep -q "shared_preload_libraries" <<<"$out"
pg_cluster_stop plain

# --- preloaded ------------------------------------------------------------------
pg_cluster_start counted -c shared_preload_libraries=pg_lease -c pg_lease.takeover_timeout=200ms
q "CREATE EXTENSION pg_lease" >/dev/null
q "CREATE DATABASE other" >/dev/null
PGDATABASE=other q "CREATE EXTENSION pg_lease" >/dev/null
q "CREATE TABLE jobs (id int, epoch bigint)" >/dev/null
q "SELECT lease_fence('jobs', 'c')" >/dev/null
check "preloaded: no lease counted yet" test "$(q "SELECT count(*) FROM lease_counters")" = 0

e1=$(q "SELECT epoch FROM lease_acquire('c', 'a', '30s')")
q "SELECT acquired FROM lease_acquire('c', 'a', '30s')" >/dev/null          # extend: a renewal
for _ in 1 2 3; do q "SELECT lease_renew('c', 'a', $e1)" >/dev/null; done
q "SELECT acquired FROM lease_acquire('c', 'b', '30s')" >/dev/null          # refused: nothing
e2=$(q "SELECT lease_handover('c', 'a', $e1, 'b')")
# refused writes: 2 stale (LS001), 1 without a token (LS003)
for sql in "INSERT INTO jobs VALUES (1, $e1)" "INSERT INTO jobs VALUES (2, $e1)" "INSERT INTO jobs VALUES (3, NULL)"; do
	psql -X -q -c "$sql" >/dev/null 2>&1 || true
done
q "INSERT INTO jobs VALUES (4, $e2)" >/dev/null                              # passes: not counted
q "SELECT lease_release('c', 'b', $e2)" >/dev/null
psql -X -q -c "INSERT INTO jobs VALUES (5, $e2)" >/dev/null 2>&1 || true     # LS002: released
e3=$(q "SELECT epoch FROM lease_acquire('c', 'd', '1s')")
# a writer stalled inside its transaction is evicted by the next grant
psql -X -q >/dev/null 2>&1 <<SQL &
BEGIN;
SELECT lease_use('c', $e3);
INSERT INTO jobs VALUES (6);
\! sleep 3
COMMIT;
SQL
writer=$!
sleep 1.2
q "SELECT acquired FROM lease_acquire('c', 'e', '30s')" >/dev/null
wait "$writer" || true
q "SELECT lease_revoke('c')" >/dev/null
PGDATABASE=other q "SELECT acquired FROM lease_acquire('c', 'x', '30s')" >/dev/null

row=$(q "SELECT grants, renewals, releases, revocations, handovers, evictions, rejected_stale, rejected_not_held, rejected_no_token FROM lease_counters WHERE name = 'c'")
check "counts: 3 grants, 4 renewals, 1 release, 1 revoke, 1 handover, 1 eviction, 2 LS001, 1 LS002, 1 LS003 (got $row)" \
	test "$row" = "3|4|1|1|1|1|2|1|1"
check "another database's lease of the same name is counted apart" \
	test "$(PGDATABASE=other q "SELECT grants || '|' || renewals FROM lease_counters WHERE name = 'c'")" = "1|0"
check "since: the server's start" test "$(q "SELECT since <= now() FROM lease_counters LIMIT 1")" = t

q "CREATE ROLE counter_reader LOGIN" >/dev/null
check "anyone may read the counters" test "$(PGUSER=counter_reader q "SELECT count(*) FROM lease_counters")" = 1
out=$(PGUSER=counter_reader psql -X -q -v VERBOSITY=verbose -c "SELECT lease_counters_reset()" 2>&1 || true)
check "only administrators may reset them (42501)" grep -q 42501 <<<"$out"
q "SELECT lease_counters_reset()" >/dev/null
check "reset: every lease's counters are gone" test "$(q "SELECT count(*) FROM lease_counters")" = 0

finish
