#!/usr/bin/env bash
# Two databases of one cluster never wait for, end, or list each other's
# writers.  Fence locks and floor locks are tags of the lock manager, which
# is the cluster's; their first field is the database.  Two fresh databases
# number their epochs alike, and two databases that fence the same (store,
# lease) downstream hash to the same floor tag but for the database: a
# change of holder, a revoke or a raise in one must not meet the other's
# writers.  Each wait below is bounded by pg_lease.takeover_timeout = 5s;
# a wait is a failure, so each change must return well within it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

pg_cluster_start cluster
for db in one two; do
	q "CREATE DATABASE $db" >/dev/null
	PGDATABASE=$db q "CREATE EXTENSION pg_lease" >/dev/null
	PGDATABASE=$db q "CREATE TABLE jobs (id int, epoch bigint); CREATE TABLE ds (id int, epoch bigint)" >/dev/null
	PGDATABASE=$db q "SELECT lease_fence('ds', 'shared', store => 'the store'); SELECT lease_raise('the store', 'shared', 10)" >/dev/null
done
one() { PGDATABASE=one "$@"; }
two() { PGDATABASE=two "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# the same first epoch in both (the premise of the test)
e1=$(one q "SELECT epoch FROM lease_acquire('a', 'w1', '1h')")
e2=$(two q "SELECT epoch FROM lease_acquire('b', 'w2', '1h')")
check "both databases granted the same epoch number ($e1)" test "$e1" = "$e2"
one q "SELECT lease_fence('jobs', 'a')" >/dev/null

# an open fenced transaction in database one: a local writer of epoch e1,
# and a downstream writer of the shared floor
writer_out=$PG_CLUSTER_ROOT/writer.out
one psql -X -q -v ON_ERROR_STOP=1 >"$writer_out" 2>&1 <<SQL &
BEGIN;
INSERT INTO jobs VALUES (1, $e1);
INSERT INTO ds VALUES (1, 10);
SELECT pg_sleep(4);
COMMIT;
SELECT 'writer committed';
SQL
writer=$!
for _ in $(seq 100); do
	[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE datname = 'one' AND query LIKE 'SELECT pg_sleep(4)%'")" = 1 ] && break
	sleep 0.05
done

check "lease_writers in database one lists its two writers" \
	test "$(one q "SELECT string_agg(coalesce(store, '-') || ':' || name, ',' ORDER BY name) FROM lease_writers")" = "-:a,the store:shared"
check "lease_writers in database two lists none of them" \
	test "$(two q "SELECT count(*) FROM lease_writers")" = 0

start=$(now_ms)
check "a revoke of epoch $e2 in database two returns true" \
	test "$(two env PGOPTIONS='-c pg_lease.takeover_timeout=5s' psql -X -q -A -t -c "SELECT lease_revoke('b')")" = t
revoke_ms=$(($(now_ms) - start))
check "the revoke did not wait for database one's writer (${revoke_ms} ms; a wait lasts 5000)" test "$revoke_ms" -lt 2500

start=$(now_ms)
check "a raise of the shared floor in database two returns true" \
	test "$(two env PGOPTIONS='-c pg_lease.takeover_timeout=5s' psql -X -q -A -t -c "SELECT lease_raise('the store', 'shared', 20)")" = t
raise_ms=$(($(now_ms) - start))
check "the raise did not wait for database one's writer (${raise_ms} ms; a wait lasts 5000)" test "$raise_ms" -lt 2500

wait "$writer" || true
check "database one's writer was neither ended nor failed" grep -q 'writer committed' "$writer_out"
check "database one's rows committed" test "$(one q "SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM ds)")" = 2
check "no eviction recorded in either database" \
	test "$(one q "SELECT count(*) FROM lease_events WHERE event = 'evict'")$(two q "SELECT count(*) FROM lease_events WHERE event = 'evict'")" = 00
check "database one's floor is unchanged" test "$(one q "SELECT epoch FROM lease_floors")" = 10

finish
