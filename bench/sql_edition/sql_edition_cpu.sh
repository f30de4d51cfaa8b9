#!/usr/bin/env bash
# How far PL/pgSQL can go (issue 36): the server's CPU per transaction of
# the SQL edition's fence and renew against what any PL/pgSQL version must
# at least do, on a throwaway server. Counted from the postmaster's reaped
# children (/proc/PID/stat cutime + cstime), so other jobs on the machine
# do not count; pgbench at 1 client, its own CPU beside it.
#
#   bench/sql_edition/sql_edition_cpu.sh [TXNS] [RUNS]    # default 20000 transactions, 2 runs
#   VARIANTS="renew_bare renew_edition" ...   # some variants only
#   EXTRA_SQL=f.sql EXTRA_RENEW=fn VARIANTS="... renew_extra" ...
#                                              # a renew function of your own, to try
#
# Fence variants, each a one-row INSERT after SET LOCAL pg_lease.epoch:
#   unfenced     no trigger
#   empty        a trigger that only returns NEW
#   least        the cheapest correct fence (sql_edition_floor.sql): the
#                fence lock, then the lease row in a new statement, checked
#                against the token
#   one_table    that, with the declared token looked up and stamped into
#                the row, written for one table (its lease and column named)
#   edition      the SQL edition's fence (lease_fence)
# Renew variants: a bare UPDATE CAS; the least safe PL/pgSQL renew (a
# locked read, then the UPDATE); lease_renew of the SQL edition.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
txns=${1:-20000}
runs=${2:-2}
source "$here/../pgbench/pgbench_common.sh" 1 1
trap pg_cluster_stop_all EXIT
pgbench_cluster_init cpu
pg_cluster_start cpu >/dev/null
pm=$(pg_as_owner head -1 "$(pg_cluster_dir cpu)/data/postmaster.pid")
q "CREATE ROLE bench_owner LOGIN" >/dev/null
q "CREATE DATABASE bench OWNER bench_owner" >/dev/null
as() { PGUSER=bench_owner psql -X -q -A -t -v ON_ERROR_STOP=1 -d bench "$@"; }
source "$here/../../scripts/lib/sql_edition.sh"
sql_edition_psql_script "$work/pg_lease_sql.sql"
as -f "$work/pg_lease_sql.sql" >/dev/null
as -f "$here/sql_edition_floor.sql" >/dev/null
as >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE unfenced (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, epoch bigint);
CREATE TABLE one_table (LIKE unfenced INCLUDING ALL);
CREATE TABLE edition (LIKE unfenced INCLUDING ALL);
CREATE FUNCTION one_table_fence() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	token bigint := coalesce((nullif(current_setting('pg_lease_sql.declared', true), '')::jsonb ->> 'f')::bigint,
							 nullif(current_setting('pg_lease.epoch', true), '')::bigint, NEW.epoch);
	r record;
BEGIN
	PERFORM pg_advisory_xact_lock_shared(19539, (token & 2147483647)::integer);
	SELECT l.epoch, l.holder, l.expires_at, l.xmin INTO r FROM public.leases l WHERE l.name = 'f';
	IF r.epoch IS DISTINCT FROM token OR r.holder IS NULL OR r.expires_at <= clock_timestamp() THEN
		RAISE EXCEPTION 'stale' USING ERRCODE = 'LS001';
	END IF;
	IF NEW.epoch IS DISTINCT FROM token THEN
		NEW.epoch := token;
	END IF;
	RETURN NEW;
END$$;
CREATE TRIGGER f BEFORE INSERT ON one_table FOR EACH ROW EXECUTE FUNCTION one_table_fence();
SELECT lease_fence('edition', 'f');
SELECT lease_acquire('f', 'writer', '1 day');
SELECT lease_acquire('r', 'h', '1 day');
CREATE TABLE bare (LIKE leases INCLUDING ALL) WITH (fillfactor = 50);
INSERT INTO bare SELECT * FROM leases WHERE name = 'r';
CREATE FUNCTION least_renew(n text, h text, e bigint) RETURNS timestamptz LANGUAGE plpgsql
	SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	l public.bare;
	now timestamptz;
BEGIN
	SELECT * INTO l FROM public.bare b WHERE b.name = n AND b.holder = h AND b.epoch = e FOR UPDATE;
	now := clock_timestamp();
	IF l.name IS NULL OR now >= l.expires_at THEN
		RETURN NULL;
	END IF;
	UPDATE public.bare b SET renewed_at = now, expires_at = now + l.ttl WHERE b.name = n;
	RETURN now + l.ttl;
END$$;
SQL
ef=$(as -c "SELECT epoch FROM leases WHERE name = 'f'")
er=$(as -c "SELECT epoch FROM leases WHERE name = 'r'")
for t in unfenced empty least one_table edition; do
	printf 'BEGIN \\; SET LOCAL pg_lease.epoch = %s;\nINSERT INTO %s (payload) VALUES (%s);\nCOMMIT;\n' "$ef" "$t" "'x'" >"$work/$t.sql"
done
echo "WITH u AS (UPDATE bare SET renewed_at = clock_timestamp(), expires_at = clock_timestamp() + ttl WHERE name = 'r' AND holder = 'h' AND epoch = $er AND expires_at > clock_timestamp() RETURNING 1) SELECT 1 / count(*)::int FROM u;" >"$work/renew_bare.sql"
echo "SELECT 1 / (least_renew('r', 'h', $er) IS NOT NULL)::int;" >"$work/renew_least.sql"
echo "SELECT 1 / (lease_renew('r', 'h', $er) IS NOT NULL)::int;" >"$work/renew_edition.sql"
if [ -n "${EXTRA_SQL:-}" ]; then # an experiment: EXTRA_SQL=file.sql EXTRA_RENEW=function
	as -f "$EXTRA_SQL" >/dev/null
	echo "SELECT 1 / (${EXTRA_RENEW}('r', 'h', $er) IS NOT NULL)::int;" >"$work/renew_extra.sql"
fi

reaped() { awk '{ print $16 + $17 }' "/proc/$pm/stat"; }
tck=$(getconf CLK_TCK)
echo "sql_edition_cpu: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); $txns transactions a run"
for r in $(seq 1 "$runs"); do
	for t in ${VARIANTS:-unfenced empty least one_table edition renew_bare renew_least renew_edition}; do
		c0=$(reaped)
		/usr/bin/time -f "%U %S" -o "$work/time.out" \
			"$pgbench" -U bench_owner -n -c 1 -t "$txns" -f "$work/$t.sql" bench >"$work/run.out" 2>&1 ||
			{ cat "$work/run.out" >&2; exit 1; }
		grep -q "actually processed: $txns/$txns" "$work/run.out" || { cat "$work/run.out" >&2; exit 1; }
		sleep 0.5 # the backend exits and is reaped
		c1=$(reaped)
		echo "$t, run $r: server $(((c1 - c0) * 1000000 / tck / txns)) µs, pgbench $(awk -v n="$txns" '{ printf "%d", ($1 + $2) * 1000000 / n }' "$work/time.out") µs a transaction"
	done
done
# the fence ran: every row of the edition's table carries the lease's epoch
[ "$(as -c "SELECT count(*) FILTER (WHERE epoch IS DISTINCT FROM $ef) FROM edition")" = 0 ] ||
	{ echo "sql_edition_cpu: rows without the lease's epoch" >&2; exit 1; }
echo "sql_edition_cpu: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
