#!/usr/bin/env bash
# The SQL edition's server CPU in instructions (valgrind's callgrind: the
# same count whatever else the machine does), as bench/pgbench/fence_callgrind.sh
# counts the C edition's: a single-user backend (postgres --single, fsync
# off) runs N transactions of one kind; each figure is (count at 600 -
# count at 100) / 500, so start-up and the first transaction's catalog
# lookups cancel out. The edition is installed with psql -f, as
# scripts/sql_edition.py writes it (or the file in SQL_EDITION_FILE).
#
#   bench/sql_edition/sql_edition_callgrind.sh [KIND...]
#
# Kinds (the fenced ones: a one-row INSERT, the token declared as named):
#   unfenced     SET LOCAL pg_lease.epoch, INSERT into an unfenced twin
#   empty        the same into a table whose trigger only returns NEW:
#                PL/pgSQL's floor
#   least        the cheapest correct fence (bench/sql_edition/sql_edition_floor.sql):
#                the fence lock, then the lease row in a new statement,
#                checked (no stamping)
#   least_definer  the same, SECURITY DEFINER (as the edition's must be)
#   fenced       SET LOCAL pg_lease.epoch, then the edition's fence
#   fenced_use   lease_use(), then the edition's fence
#   fenced_row   the epoch in the row, the edition's fence
#   fenced_col   SET LOCAL pg_lease.epoch, a table fenced on a column not
#                named epoch (stamped through jsonb)
#   renew_bare   the bare UPDATE compare-and-swap on a twin of leases
#   renew        lease_renew
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kinds=${*:-unfenced empty least least_definer fenced fenced_use fenced_row fenced_col renew_bare renew}
source "$here/../../tests/harness/pg_cluster.sh"
pg_cluster_start cg >/dev/null
edition=${SQL_EDITION_FILE:-$PG_CLUSTER_ROOT/pg_lease_sql.sql}
[ -n "${SQL_EDITION_FILE:-}" ] || { source "$here/../../scripts/lib/sql_edition.sh" && sql_edition_psql_script "$edition"; }
psql -X -q -v ON_ERROR_STOP=1 -f "$edition" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -f "$here/sql_edition_floor.sql" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT lease_acquire('f', 'writer', '1 day');
SELECT lease_acquire('r', 'h', '1 day');
CREATE TABLE fenced (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, epoch bigint);
CREATE TABLE unfenced (LIKE fenced INCLUDING ALL);
SELECT lease_fence('fenced', 'f');
CREATE TABLE fenced_col (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, token bigint);
SELECT lease_fence('fenced_col', 'f', 'token');
CREATE TABLE bare (LIKE leases INCLUDING ALL) WITH (fillfactor = 50);
INSERT INTO bare SELECT * FROM leases WHERE name = 'r';
SQL
ef=$(psql -X -A -t -c "SELECT epoch FROM leases WHERE name = 'f'")
er=$(psql -X -A -t -c "SELECT epoch FROM leases WHERE name = 'r'")
pg_cluster_stop cg
data=$(pg_cluster_dir cg)/data
work=$PG_CLUSTER_ROOT/cg.work
mkdir -p "$work"
chmod 0777 "$work"

# transaction KIND: one line (--single runs a line each)
transaction()
{
	local into="BEGIN; SET LOCAL pg_lease.epoch = '$ef'; INSERT INTO"
	case $1 in
	unfenced) echo "$into unfenced (payload) VALUES ('x'); COMMIT;" ;;
	empty | least | least_definer | fenced) echo "$into $1 (payload) VALUES ('x'); COMMIT;" ;;
	fenced_col) echo "$into fenced_col (payload) VALUES ('x'); COMMIT;" ;;
	fenced_use) echo "BEGIN; SELECT lease_use('f', $ef); INSERT INTO fenced (payload) VALUES ('x'); COMMIT;" ;;
	fenced_row) echo "BEGIN; INSERT INTO fenced (payload, epoch) VALUES ('x', $ef); COMMIT;" ;;
	renew_bare) echo "UPDATE bare SET renewed_at = clock_timestamp(), expires_at = clock_timestamp() + ttl WHERE name = 'r' AND holder = 'h' AND epoch = $er AND expires_at > clock_timestamp() RETURNING expires_at;" ;;
	renew) echo "SELECT lease_renew('r', 'h', $er);" ;;
	*) echo "sql_edition_callgrind: unknown kind $1" >&2; return 1 ;;
	esac
}

# instructions KIND N: the backend's instruction count for N transactions
instructions()
{
	local out=$work/$1.$2 i
	for i in $(seq "$2"); do transaction "$1"; done >"$out.sql"
	chmod a+r "$out.sql"
	pg_as_owner valgrind --tool=callgrind --callgrind-out-file="$out.cg" \
		"$PG_BIN/postgres" --single -D "$data" -c fsync=off postgres <"$out.sql" >"$out.log" 2>&1
	! grep -q ERROR "$out.log" || { grep -m3 ERROR "$out.log" >&2; return 1; }
	awk '/^summary:/ { print $2 }' "$out.cg"
}

echo "| transaction | instructions |"
echo "|---|---:|"
for k in $kinds; do
	a=$(instructions "$k" 100)
	b=$(instructions "$k" 600)
	echo "| $k | $(((b - a) / 500)) |"
done
# the fence ran: every fenced row carries the lease's epoch
[ "$(pg_as_owner "$PG_BIN/postgres" --single -D "$data" postgres <<<"SELECT (SELECT count(*) FILTER (WHERE epoch IS DISTINCT FROM $ef) FROM fenced) + (SELECT count(*) FILTER (WHERE token IS DISTINCT FROM $ef) FROM fenced_col) AS unstamped;" 2>&1 | sed -n 's/.*unstamped = "\([0-9]*\)".*/\1/p')" = 0 ] ||
	{ echo "sql_edition_callgrind: fenced rows without the lease's epoch" >&2; exit 1; }
echo "(valgrind --tool=callgrind, postgres --single, fsync off; (600 - 100 transactions) / 500)"
