#!/usr/bin/env bash
# Upgrades 1.0 -> ... -> 1.5, 1.1 -> ... -> 1.5 and 1.3 -> 1.4 -> 1.5 (an old
# version has no full script of its own: CREATE EXTENSION ... VERSION '1.3'
# runs pg_lease--1.0.sql and the updates up to 1.3, as pgvector ships): the
# new library works on the old schemas until ALTER EXTENSION ... UPDATE
# (renewals must not stop while an operator upgrades), each update keeps
# every lease and epoch, and every path leaves the same objects as a fresh
# install from the one full script of the current version
# (sql/pg_lease--1.5.sql): columns, constraints, indexes, views, tables,
# sequences, types, functions (arguments, defaults, body, language,
# volatility, strictness, security, settings, rights, comments) and what is
# dumped with the data.
# (upgrade_mixed.sh: the update while 1.2 libraries still run.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

pg_cluster_start upgrade
q "CREATE DATABASE old" >/dev/null
q "CREATE DATABASE fresh" >/dev/null
q "CREATE DATABASE mid" >/dev/null
q "CREATE DATABASE from13" >/dev/null

# --- the new library on a 1.0 schema ----------------------------------------
export PGDATABASE=old
q "CREATE EXTENSION pg_lease VERSION '1.0'" >/dev/null
check "installed at 1.0" test "$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.0
epoch=$(q "SELECT epoch FROM lease_acquire('up', 'a', '30s')")
check "1.0 schema: renew works" test "$(q "SELECT lease_renew('up', 'a', $epoch) IS NOT NULL")" = t
q "CREATE TABLE up_jobs (id int, epoch bigint)" >/dev/null
q "SELECT lease_fence('up_jobs', 'up')" >/dev/null
check "1.0 schema: a fenced write passes" \
	q "BEGIN; SELECT lease_use('up', $epoch); INSERT INTO up_jobs VALUES (1); COMMIT;"
check "1.0 schema: release works" test "$(q "SELECT lease_release('up', 'a', $epoch)")" = t
epoch=$(q "SELECT epoch FROM lease_acquire('up', 'b', '30s')")
events=$(q "SELECT count(*) FROM lease_events")

# --- the update --------------------------------------------------------------
q "ALTER EXTENSION pg_lease UPDATE TO '1.1'" >/dev/null
check "updated to 1.1" test "$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.1
check "the lease and its epoch survive the update" \
	test "$(q "SELECT holder || ' ' || epoch || ' ' || lock_delay FROM lease_status WHERE name = 'up' AND valid")" = "b $epoch 00:00:00"
check "the history survives the update" test "$(q "SELECT count(*) FROM lease_events")" = "$events"
check "the holder renews across the update" test "$(q "SELECT lease_renew('up', 'b', $epoch) IS NOT NULL")" = t
check "1.1 functions work after the update" \
	test "$(q "SELECT lease_handover('up', 'b', $epoch, 'c') > $epoch")" = t
check "the fence still guards the table" \
	grep -q LS001 <<<"$(psql -X -q -v VERBOSITY=verbose -c "BEGIN; SELECT lease_use('up', $epoch); INSERT INTO up_jobs VALUES (2); COMMIT;" 2>&1 || true)"

# --- 1.1 -> 1.2: the lease group views ---------------------------------------
epoch=$(q "SELECT epoch FROM lease_acquire('pglease:group/up/shard/s1', 'm1', '30s')")
q "SELECT lease_acquire('pglease:group/up/member/1/m1', 'm1', '30s')" >/dev/null
events=$(q "SELECT count(*) FROM lease_events")
q "ALTER EXTENSION pg_lease UPDATE TO '1.2'" >/dev/null
check "updated to 1.2" test "$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.2
check "the history survives the update to 1.2" test "$(q "SELECT count(*) FROM lease_events")" = "$events"
check "1.2: lease_group_shards shows the shard held before the update" \
	test "$(q "SELECT group_name || ' ' || shard || ' ' || holder || ' ' || epoch || ' ' || valid FROM lease_group_shards")" = "up s1 m1 $epoch true"
check "1.2: lease_group_members counts its shard" \
	test "$(q "SELECT member || ' ' || weight || ' ' || valid || ' ' || shards FROM lease_group_members")" = "m1 1 true 1"
check "the shard's holder renews across the update" \
	test "$(q "SELECT lease_renew('pglease:group/up/shard/s1', 'm1', $epoch) IS NOT NULL")" = t

# --- 1.2 -> 1.3: the fence lock in the lock manager ---------------------------
check "1.2 schema with the new library: a fenced write passes" \
	q "BEGIN; SELECT lease_use('pglease:group/up/shard/s1', $epoch); COMMIT;"
q "ALTER EXTENSION pg_lease UPDATE TO '1.3'" >/dev/null
check "updated to 1.3" test "$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.3
check "the shard's holder renews across the update to 1.3" \
	test "$(q "SELECT lease_renew('pglease:group/up/shard/s1', 'm1', $epoch) IS NOT NULL")" = t
check "1.3: the update is recorded" test "$(q "SELECT count(*) FROM lease_upgrades WHERE version = '1.3'")" = 1
check "1.3: lease_writers shows a fenced transaction" \
	test "$(psql -X -q -A -t -v ON_ERROR_STOP=1 -c "BEGIN" -c "SELECT lease_use('pglease:group/up/shard/s1', $epoch) IS NULL" \
		-c "SELECT name || ' ' || epoch || ' ' || granted FROM lease_writers WHERE pid = pg_backend_pid()" -c "COMMIT" | tail -1)" = "pglease:group/up/shard/s1 $epoch true"

# --- 1.3 -> 1.4: downstream fences ------------------------------------------
q "CREATE TABLE up_copies (id int, epoch bigint)" >/dev/null
q "ALTER EXTENSION pg_lease UPDATE TO '1.4'" >/dev/null
check "updated to 1.4" test "$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.4
check "1.4 needs no compatibility period: nothing recorded" test "$(q "SELECT count(*) FROM lease_upgrades WHERE version = '1.4'")" = 0
check "1.4: the old fence keeps its two arguments and still guards its table" \
	grep -q LS001 <<<"$(psql -X -q -v VERBOSITY=verbose -c "BEGIN; SELECT lease_use('up', $epoch); INSERT INTO up_jobs VALUES (3); COMMIT;" 2>&1 || true)"
q "SELECT lease_fence('up_copies', 'job', store => 'other/db')" >/dev/null
check "1.4: lease_raise raises a floor" test "$(q "SELECT lease_raise('other/db', 'job', 7)")" = t
check "1.4: a downstream fence refuses a token below the floor" \
	grep -q LS001 <<<"$(psql -X -q -v VERBOSITY=verbose -c "INSERT INTO up_copies VALUES (1, 6)" 2>&1 || true)"
check "1.4: and takes one at the floor" q "INSERT INTO up_copies VALUES (1, 7)"
check "1.4: lease_floors shows the floor" test "$(q "SELECT store || ' ' || name || ' ' || epoch FROM lease_floors")" = "other/db job 7"

# --- 1.4 -> 1.5: named tokens move floors; the epoch mark ---------------------
before_15=$(q "SELECT max(epoch) FROM lease_events")
q "ALTER EXTENSION pg_lease UPDATE" >/dev/null
check "updated to 1.5 (the default)" test "$(q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.5
check "1.5: the floor of 1.4 is kept, and its token passes" q "INSERT INTO up_copies VALUES (2, 7)"
check "1.5: an unnamed token above the floor is refused (LS003) and raises nothing" \
	grep -q LS003 <<<"$(psql -X -q -v VERBOSITY=verbose -c "INSERT INTO up_copies VALUES (3, 8)" 2>&1 || true)"
check "1.5: a token named for the lease raises it" \
	q "BEGIN; SELECT lease_use('job', 8); INSERT INTO up_copies VALUES (3, NULL); COMMIT;"
check "1.5: no epoch mark before the first grant" test "$(q "SELECT count(*) FROM lease_epoch_mark")" = 0
q "SELECT lease_revoke('up')" >/dev/null
after_15=$(q "SELECT epoch FROM lease_acquire('up', 'after', '30s')")
check "1.5: the first grant ($after_15) is above every epoch recorded before the update ($before_15)" \
	test "$after_15" -gt "$before_15"
check "1.5: and records the mark" test "$(q "SELECT count(*) FROM lease_epoch_mark")" = 1
check "1.5: lease_writers has the store column" \
	test "$(q "SELECT count(*) FROM information_schema.columns WHERE table_name = 'lease_writers' AND column_name = 'store'")" = 1

# --- a 1.1 install updated to 1.2 --------------------------------------------
PGDATABASE=mid q "CREATE EXTENSION pg_lease VERSION '1.1'" >/dev/null
mid_epoch=$(PGDATABASE=mid q "SELECT epoch FROM lease_acquire('pglease:group/g/shard/0', 'x', '30s')")
check "1.1 schema with the new library: lease_renew_many works" \
	test "$(PGDATABASE=mid q "SELECT count(*) FROM lease_renew_many(ARRAY['pglease:group/g/shard/0'], 'x', ARRAY[$mid_epoch]::bigint[]) WHERE expires_at IS NOT NULL")" = 1
PGDATABASE=mid q "ALTER EXTENSION pg_lease UPDATE TO '1.2'" >/dev/null
check "1.1 updated to 1.2" test "$(PGDATABASE=mid q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.2
check "1.1 -> 1.2: the shard shows in lease_group_shards" \
	test "$(PGDATABASE=mid q "SELECT holder || ' ' || epoch FROM lease_group_shards WHERE group_name = 'g'")" = "x $mid_epoch"
PGDATABASE=mid q "ALTER EXTENSION pg_lease UPDATE" >/dev/null
check "1.1 -> 1.2 -> 1.3 -> 1.4 -> 1.5" test "$(PGDATABASE=mid q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.5

# --- a 1.3 install (1.0 and its updates) updated -------------------------------
PGDATABASE=from13 q "CREATE EXTENSION pg_lease VERSION '1.3'" >/dev/null
PGDATABASE=from13 q "ALTER EXTENSION pg_lease UPDATE" >/dev/null
check "1.3 -> 1.4 -> 1.5" test "$(PGDATABASE=from13 q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.5

# --- same objects as a fresh install ----------------------------------------
PGDATABASE=fresh q "CREATE EXTENSION pg_lease" >/dev/null
check "a fresh install is version 1.5" test "$(PGDATABASE=fresh q "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = 1.5
check "a fresh install records no update" test "$(PGDATABASE=fresh q "SELECT count(*) FROM lease_upgrades")" = 0
describe()
{
	PGDATABASE=$1 psql -X -q -A -t -v ON_ERROR_STOP=1 <<'SQL'
SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
       || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
       || coalesce(' -- ' || col_description(c.oid, a.attnum), '')
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'v') AND c.relname LIKE 'lease%'
UNION ALL
SELECT 'constraint ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid)
  FROM pg_constraint WHERE conrelid IN ('leases'::regclass, 'lease_events'::regclass)
UNION ALL
SELECT 'view ' || c.relname || ' ' || pg_get_viewdef(c.oid) || ' -- ' || obj_description(c.oid, 'pg_class')
  FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'v'
UNION ALL
SELECT 'table ' || c.relname || ' -- ' || coalesce(obj_description(c.oid, 'pg_class'), '') || ' ' || coalesce(c.relacl::text, '')
  FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'v', 'S')
   AND c.relname LIKE 'lease%'
UNION ALL
SELECT 'function ' || p.oid::regprocedure || ' (' || pg_get_function_arguments(p.oid) || ') returns '
       || pg_get_function_result(p.oid) || ' ' || l.lanname || ' ' || p.provolatile::text || ' strict ' || p.proisstrict
       || ' ' || p.prosecdef || ' ' || coalesce(p.proconfig::text, '')
       || ' ' || coalesce(p.proacl::text, '') || ' ' || md5(p.prosrc) || ' -- ' || coalesce(obj_description(p.oid, 'pg_proc'), '')
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.pronamespace = 'public'::regnamespace
UNION ALL
SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename LIKE 'lease%'
UNION ALL
SELECT 'sequence ' || s.seqrelid::regclass || ' ' || format_type(s.seqtypid, NULL) || ' ' || s.seqstart
       || ' ' || s.seqincrement || ' ' || s.seqmax || ' ' || s.seqcycle || coalesce(' owned by ' || d.refobjid::regclass || '.' || d.refobjsubid, '')
  FROM pg_sequence s LEFT JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.seqrelid AND d.deptype = 'a'
 WHERE s.seqrelid::regclass::text LIKE 'lease%'
UNION ALL
SELECT 'type ' || t.typname || ' ' || string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
       || ' -- ' || coalesce(obj_description(t.oid, 'pg_type'), '')
  FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0
 WHERE t.typnamespace = 'public'::regnamespace AND t.typtype = 'c'
   AND (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c'
 GROUP BY t.oid, t.typname
UNION ALL
SELECT 'dumped with the data: ' || string_agg(c::regclass::text, ', ' ORDER BY c::regclass::text)
  FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'pg_lease'
ORDER BY 1;
SQL
}
describe old >"$PG_CLUSTER_ROOT/old.txt"
describe mid >"$PG_CLUSTER_ROOT/mid.txt"
describe from13 >"$PG_CLUSTER_ROOT/from13.txt"
describe fresh >"$PG_CLUSTER_ROOT/fresh.txt"
check "1.0 -> 1.1 -> 1.2 -> 1.3 -> 1.4 -> 1.5 describes the same objects as a fresh 1.5 ($(wc -l <"$PG_CLUSTER_ROOT/fresh.txt") lines)" \
	diff "$PG_CLUSTER_ROOT/old.txt" "$PG_CLUSTER_ROOT/fresh.txt"
check "1.1 -> 1.2 -> 1.3 -> 1.4 -> 1.5 describes the same objects as a fresh 1.5" \
	diff "$PG_CLUSTER_ROOT/mid.txt" "$PG_CLUSTER_ROOT/fresh.txt"
check "1.3 -> 1.4 -> 1.5 describes the same objects as a fresh 1.5" \
	diff "$PG_CLUSTER_ROOT/from13.txt" "$PG_CLUSTER_ROOT/fresh.txt"
check "the description covers every kind of object" bash -c \
	"for k in column constraint index view table sequence type function 'dumped with the data'; do grep -q \"^\$k[ :]\" '$PG_CLUSTER_ROOT/fresh.txt' || { echo \"no \$k\"; exit 1; }; done"

finish
