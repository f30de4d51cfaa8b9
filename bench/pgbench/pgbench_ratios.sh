#!/usr/bin/env bash
# The hot paths measured with pgbench alone, independently of pglease_bench:
# lease_renew against a bare UPDATE compare-and-swap on a table of the
# leases' shape, each client renewing a random one of 100 leases of its own
# on both sides (every renewal checked: a NULL from lease_renew, or an
# UPDATE that finds no row, fails the run), and a fenced one-row INSERT transaction against the
# same transaction unfenced, at 1, 4 and 16 clients, on one server (fsync
# on, shared_preload_libraries = 'pg_lease') with a follower LISTENing on
# pg_lease.  Each figure is the median of per-round ratios; the two sides
# alternate order from round to round.  The fenced transactions are sent as
# the C++ client sends them: BEGIN and the token in one query, then the
# INSERT, then COMMIT (simple protocol, three round trips, as pqxx::work).
# The fenced transaction is also measured against the same shape unfenced,
# with the same SET LOCAL (the token's own cost on both sides).  Its floor,
# side by side with the unfenced one: the same unfenced transaction with the
# share lock the fence takes (SPEC 1.3: a share lock in the lock manager)
# written as plain SQL in its BEGIN (pg_advisory_xact_lock_shared), no
# trigger and no token; and 1.2's floor, FOR KEY SHARE on a row.  And the
# token's declaration alone: the unfenced transaction with the SET LOCAL
# that run_fenced sends (SPEC 1.1) against the same without it.
#
#   bench/pgbench/pgbench_ratios.sh [SECONDS_PER_RUN] [ROUNDS] [CLIENTS...]
#   PGBENCH_RATIOS_ONLY="fenced_set declare" bench/pgbench/pgbench_ratios.sh ...  # these figures only
#   PG_BIN=/path/to/bin bench/pgbench/pgbench_ratios.sh   # another PostgreSQL install
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/pgbench_common.sh" "$@"
source "$here/follower.sh"
pgbench_cluster_init ratios
echo "shared_preload_libraries = 'pg_lease'" | pg_as_owner tee -a "$(pg_cluster_dir ratios)/data/postgresql.conf" >/dev/null
pg_cluster_start ratios

# 100 leases per client (r-N-K, held by hN for a day), granted in order so
# that their epochs are consecutive (checked below: a client computes the
# epoch of lease K as e0 + 100 * client_id + K), and their bare twins with
# the same epochs; one lease f fencing one table, and an unfenced twin table.
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION pg_lease;
DO $$
BEGIN
	FOR i IN 1 .. 64 LOOP
		FOR k IN 0 .. 99 LOOP
			PERFORM lease_acquire('r-' || i || '-' || k, 'h' || i, '1 day');
		END LOOP;
	END LOOP;
END
$$;
CREATE TABLE bare (LIKE leases INCLUDING ALL) WITH (fillfactor = 50);
INSERT INTO bare SELECT * FROM leases;
SELECT lease_acquire('f', 'writer', '1 day');
CREATE TABLE fenced (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, epoch bigint);
CREATE TABLE unfenced (LIKE fenced INCLUDING ALL);
SELECT lease_fence('fenced', 'f');
CREATE TABLE lock_row (id int PRIMARY KEY);
INSERT INTO lock_row VALUES (1);
SQL

e0=$(psql -X -A -t -c "SELECT min(epoch) FROM leases WHERE name LIKE 'r-%'")
[ "$(psql -X -A -t -c "SELECT count(*) FROM leases WHERE name LIKE 'r-%' AND epoch <> $e0 + 100 * (split_part(name, '-', 2)::int - 1) + split_part(name, '-', 3)::int")" = 0 ] ||
	{ echo "pgbench_ratios: the renewed leases' epochs are not consecutive" >&2; exit 1; }
# A random one of the client's 100 leases, and its epoch.
pick="\\set k random(0, 99)
\\set e $e0 + 100 * :client_id + :k"
fence_epoch_once="\\if :epoch = 0
SELECT epoch FROM leases WHERE name = 'f' \\gset
\\endif"
cat >"$work/renew.sql" <<SQL
$pick
SELECT 1 / (lease_renew('r-' || :client_id + 1 || '-' || :k, 'h' || :client_id + 1, :e) IS NOT NULL)::int AS renewed \\gset
SQL
cat >"$work/bare.sql" <<SQL
$pick
UPDATE bare SET renewed_at = clock_timestamp(), expires_at = clock_timestamp() + ttl WHERE name = 'r-' || :client_id + 1 || '-' || :k AND holder = 'h' || :client_id + 1 AND epoch = :e AND expires_at > clock_timestamp() RETURNING expires_at \\gset
SQL
cat >"$work/fenced_set.sql" <<SQL
$fence_epoch_once
BEGIN \\; SET LOCAL pg_lease.epoch = :epoch;
INSERT INTO fenced (payload) VALUES ('x');
COMMIT;
SQL
cat >"$work/fenced_use.sql" <<SQL
$fence_epoch_once
BEGIN \\; SELECT lease_use('f', :epoch);
INSERT INTO fenced (payload) VALUES ('x');
COMMIT;
SQL
cat >"$work/unfenced_set.sql" <<SQL
$fence_epoch_once
BEGIN \\; SET LOCAL pg_lease.epoch = :epoch;
INSERT INTO unfenced (payload) VALUES ('x');
COMMIT;
SQL
cat >"$work/unfenced_advisory.sql" <<SQL
BEGIN \\; SELECT pg_advisory_xact_lock_shared(1);
INSERT INTO unfenced (payload) VALUES ('x');
COMMIT;
SQL
cat >"$work/unfenced_locked.sql" <<SQL
BEGIN \\; SELECT 1 FROM lock_row WHERE id = 1 FOR KEY SHARE;
INSERT INTO unfenced (payload) VALUES ('x');
COMMIT;
SQL
cat >"$work/unfenced.sql" <<SQL
BEGIN;
INSERT INTO unfenced (payload) VALUES ('x');
COMMIT;
SQL

# run SCRIPT MODE CLIENTS: transactions per second
run()
{
	"$pgbench" -n -M "$2" -c "$3" -j "$3" -T "$secs" -D epoch=0 -f "$work/$1.sql" >"$work/run.out" 2>&1 ||
		{ cat "$work/run.out" >&2; return 1; }
	grep -q '^number of failed transactions: 0 ' "$work/run.out" ||
		! grep -q '^number of failed transactions' "$work/run.out" ||
		{ cat "$work/run.out" >&2; return 1; }
	awk '/^tps/ { print int($3) }' "$work/run.out"
}

# The follower: LISTEN pg_lease for the whole run.
follower_start ratios
trap 'touch "$work/follower.stop"; wait "$follower" 2>/dev/null || true; pg_cluster_stop_all' EXIT

# pair NAME SCRIPT BASELINE MODE CLIENTS: one round, order by round parity
declare -A ratios tps_a tps_b
pair()
{
	local a b
	[ -z "${PGBENCH_RATIOS_ONLY:-}" ] || [[ " $PGBENCH_RATIOS_ONLY " == *" $1 "* ]] || return 0
	if [ $(($5 + r)) -eq $((($5 + r) / 2 * 2)) ]; then
		a=$(run "$2" "$4" "$5")
		b=$(run "$3" "$4" "$5")
	else
		b=$(run "$3" "$4" "$5")
		a=$(run "$2" "$4" "$5")
	fi
	ratios[$1.$5]="${ratios[$1.$5]:-} $(ratio "$a" "$b")"
	tps_a[$1.$5]="${tps_a[$1.$5]:-} $a"
	tps_b[$1.$5]="${tps_b[$1.$5]:-} $b"
	echo "$1, $5 clients, round $r: $a/s vs $b/s, ratio $(ratio "$a" "$b")"
}

# renewed COUNT SINCE: each client renewed leases of its own on both sides
# (every renewal is checked in its script too: a failed one fails the run)
renewed()
{
	local t
	for t in leases bare; do
		[ "$(psql -X -A -t -c "SELECT count(DISTINCT holder) FROM $t WHERE name LIKE 'r-%' AND renewed_at > '$2'")" -eq "$1" ] ||
			{ echo "pgbench_ratios: not every client renewed $t rows" >&2; exit 1; }
	done
}

for c in "${clients[@]}"; do
	for r in $(seq 1 "$rounds"); do
		since=$(psql -X -A -t -c "SELECT clock_timestamp()")
		pair renew renew bare prepared "$c"
		[ -z "${tps_a[renew.$c]:-}" ] || renewed "$c" "$since"
		pair fenced_set fenced_set unfenced simple "$c"
		pair fenced_same fenced_set unfenced_set simple "$c"
		pair fenced_use fenced_use unfenced simple "$c"
		pair floor unfenced_advisory unfenced simple "$c"
		pair floor12 unfenced_locked unfenced simple "$c"
		pair declare unfenced_set unfenced simple "$c"
	done
done

# The fence was exercised: every fenced row carries the lease's epoch.
psql -X -A -t -v ON_ERROR_STOP=1 -c "SELECT count(*) FILTER (WHERE f.epoch IS DISTINCT FROM l.epoch) FROM fenced f, leases l WHERE l.name = 'f'" |
	grep -qx 0 || { echo "fenced rows without the lease's epoch" >&2; exit 1; }

echo
echo "| figure | clients | pg_lease/s | baseline/s | ratio (median of rounds) |"
echo "|---|---:|---:|---:|---:|"
# row KEY TEXT CLIENTS: one table row, when the figure was measured
row()
{
	[ -n "${ratios[$1.$3]:-}" ] || return 0
	echo "| $2 | $3 | $(median <<<"${tps_a[$1.$3]}") | $(median <<<"${tps_b[$1.$3]}") | $(median <<<"${ratios[$1.$3]}")x |"
}
for c in "${clients[@]}"; do
	row renew "lease_renew vs bare UPDATE CAS, a random one of 100 leases per client (-M prepared)" "$c"
	row fenced_set "fenced INSERT, BEGIN + SET LOCAL pg_lease.epoch vs unfenced BEGIN/INSERT/COMMIT" "$c"
	row fenced_same "fenced INSERT, BEGIN + SET LOCAL vs the same unfenced, with the same SET LOCAL" "$c"
	row fenced_use "fenced INSERT, BEGIN + lease_use vs unfenced BEGIN/INSERT/COMMIT" "$c"
	row floor "the fenced transaction's floor (1.3): unfenced BEGIN + pg_advisory_xact_lock_shared, INSERT, COMMIT vs unfenced BEGIN/INSERT/COMMIT" "$c"
	row floor12 "1.2's floor: unfenced BEGIN + SELECT 1 ... FOR KEY SHARE, INSERT, COMMIT vs unfenced BEGIN/INSERT/COMMIT" "$c"
	row declare "the token's declaration alone: unfenced BEGIN + SET LOCAL pg_lease.epoch, INSERT, COMMIT vs unfenced BEGIN/INSERT/COMMIT" "$c"
done
echo "(pgbench, fsync on, preloaded, a follower LISTENing; medians over $rounds rounds of ${secs}s)"
