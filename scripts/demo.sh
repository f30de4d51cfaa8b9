#!/usr/bin/env bash
# The demo: on a fresh Debian 12 machine, installs what it lacks, builds and
# installs the extension, starts a throwaway PostgreSQL, and shows a stale
# leader being refused by the database itself.  Exits non-zero if any step
# did not happen as told.  (The full multi-process demo with `pglease run`
# arrives with the pglease command.)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
make -s -f Makefile.pgxs >/dev/null
sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
"${sudo[@]}" make -s -f Makefile.pgxs install >/dev/null

source tests/harness/pg_cluster.sh
pg_cluster_start demo
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
sql() { psql -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=verbose "$@"; }
value() { psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"; }

say "A throwaway PostgreSQL is running on 127.0.0.1:$PGPORT; installing pg_lease"
sql -c "CREATE EXTENSION pg_lease" \
	-c "CREATE TABLE ledger (id serial PRIMARY KEY, writer text, epoch bigint)" \
	-c "SELECT lease_fence('ledger', 'scheduler')"

say "worker-a acquires the 'scheduler' lease for 2 seconds"
sql -c "SELECT * FROM lease_acquire('scheduler', 'worker-a', '2s')"
epoch_a=$(value "SELECT epoch FROM leases WHERE name = 'scheduler'")

say "worker-b asks too, is refused, and learns who leads until when"
sql -c "SELECT * FROM lease_acquire('scheduler', 'worker-b', '2s')"

say "worker-a writes with its fencing token (epoch $epoch_a): accepted"
sql -c "BEGIN" -c "SELECT lease_use('scheduler', $epoch_a)" \
	-c "INSERT INTO ledger (writer) VALUES ('worker-a')" -c "COMMIT"

say "worker-a stalls (GC, SIGSTOP, VM pause) past its ttl; worker-b takes over"
sleep 2.5
sql -c "SELECT * FROM lease_acquire('scheduler', 'worker-b', '30s')"
epoch_b=$(value "SELECT epoch FROM leases WHERE name = 'scheduler'")
[ "$epoch_b" -gt "$epoch_a" ] || { echo "demo: the new epoch is not larger" >&2; exit 1; }

say "worker-a wakes up, still believes it leads, and writes: refused"
refused=$(psql -X -q -v VERBOSITY=verbose -c "BEGIN" -c "SELECT lease_use('scheduler', $epoch_a)" \
	-c "INSERT INTO ledger (writer) VALUES ('worker-a, stale')" -c "COMMIT" 2>&1 || true)
echo "$refused"
echo "$refused" | grep -q "LS001" || { echo "demo: the stale write was not refused with LS001" >&2; exit 1; }

say "worker-b writes with epoch $epoch_b: accepted"
sql -c "BEGIN" -c "SELECT lease_use('scheduler', $epoch_b)" \
	-c "INSERT INTO ledger (writer) VALUES ('worker-b')" -c "COMMIT"

say "The ledger: no stale write landed"
sql -c "SELECT * FROM ledger ORDER BY id"
[ "$(value "SELECT count(*) FROM ledger WHERE writer LIKE '%stale%'")" = 0 ] || exit 1

say "The history of the lease"
sql -c "SELECT id, event, holder, epoch, time FROM lease_events ORDER BY id"
say "Demo finished: the stale leader was refused by the database (SQLSTATE LS001)"
