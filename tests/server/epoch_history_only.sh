#!/usr/bin/env bash
# Epochs above every recorded one where no epoch mark exists (issue 50):
# without lease_epoch_mark's row (a fresh install restored from a dump of a
# store, a 1.4 schema updated to 1.5) the next era is taken from the
# highest epoch in leases AND in lease_events. An epoch recorded only in
# the history, its lease row deleted, must never be issued again, nor
# anything below it. Both editions: pg_lease (C) in one database, the SQL
# edition (pg_lease_sql, scripts/sql_edition.py's psql script) in another.
#
# Each time the mark is deleted (as such a restore leaves it) the next
# grant's era is one above the highest recorded, so two such grants of
# "gone" put its epoch two eras above "keep"'s; then gone's row is deleted:
# leases' highest epoch is two eras below the history's. The next grant
# without a mark must still be above the history's highest epoch (an era
# taken from leases alone would be one below it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

era() { echo $(($1 >> 47)); }
unmark() { q "DELETE FROM lease_epoch_mark" >/dev/null; }
# grant NAME HOLDER: a new grant (whoever held it is revoked first); prints the epoch
grant() { q "SELECT lease_revoke('$1')" >/dev/null; q "SELECT epoch FROM lease_acquire('$1', '$2', '1h') WHERE acquired"; }

pg_cluster_start epoch_history_only
work=$PG_CLUSTER_ROOT
q "CREATE DATABASE c_edition" >/dev/null
q "CREATE DATABASE sql_edition" >/dev/null
PGDATABASE=c_edition q "CREATE EXTENSION pg_lease" >/dev/null
source "$here/../../scripts/lib/sql_edition.sh"
sql_edition_psql_script "$work/pg_lease_sql.sql"
PGDATABASE=sql_edition psql -X -q -v ON_ERROR_STOP=1 -f "$work/pg_lease_sql.sql" >/dev/null

for edition in c_edition sql_edition; do
	export PGDATABASE=$edition
	check "$edition: no function of the other edition here" \
		test "$(q "SELECT count(*) FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
			WHERE p.proname = 'lease_acquire' AND l.lanname = '$([ $edition = c_edition ] && echo plpgsql || echo c)'")" = 0
	keep=$(grant keep k)
	unmark
	gone1=$(grant gone g1)
	unmark
	gone=$(grant gone g2)
	check "$edition: without a mark each grant's era is one above the highest recorded (keep $(era "${keep:-0}"), gone $(era "${gone1:-0}") then $(era "${gone:-0}"))" \
		test "$(era "${gone1:-0}")/$(era "${gone:-0}")" = "$(($(era "${keep:-0}") + 1))/$(($(era "${keep:-0}") + 2))"
	q "DELETE FROM leases WHERE name = 'gone'" >/dev/null
	unmark
	check "$edition: no mark; leases' highest epoch is keep's ($keep), the history's is gone's ($gone), only there" \
		test "$(q "SELECT (SELECT count(*) FROM lease_epoch_mark) || ' ' || (SELECT max(epoch) FROM leases) || ' ' ||
			(SELECT max(epoch) FROM lease_events) || ' ' || (SELECT count(*) FROM leases WHERE epoch = $gone)")" = "0 $keep $gone 0"
	next=$(grant next n)
	check "$edition: the next grant's epoch ($next, era $(era "${next:-0}")) is above the history-only one ($gone, era $(era "$gone"))" \
		test "${next:-0}" -gt "$gone"
	check "$edition: and above every epoch recorded, in leases and lease_events" \
		test "$(q "SELECT count(*) FROM (SELECT epoch FROM leases WHERE name <> 'next'
			UNION ALL SELECT epoch FROM lease_events WHERE holder <> 'n') r WHERE epoch >= ${next:-0}")" = 0
	next2=$(grant keep k2)
	check "$edition: the grants after it (the mark recorded again) go on above it ($next2 > $next)" \
		test "${next2:-0}" -gt "${next:-0}"
done

finish
