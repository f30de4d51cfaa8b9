#!/usr/bin/env bash
# The demo: on a fresh Debian 12 machine, installs what it lacks, builds the
# extension and the pglease command, installs the extension, starts a
# throwaway PostgreSQL, and shows the whole story with three workers that
# run `pglease run` over a shell loop appending fenced rows:
#
#   1. one of them leads and writes with its epoch;
#   2. the leader is paused with SIGSTOP past its ttl; a follower takes over
#      with a larger epoch;
#   3. the paused leader wakes: its write is refused by the database (LS001),
#      and its write to a second database (`reports`, fenced by the same
#      lease's floor, raised by the new leader before its job started) too;
#      pglease stops it (exit 76);
#   4. the new leader is killed with SIGKILL: the failover time is printed;
#   5. a graceful stop releases the lease: the hand-over time is printed;
#   6. a timeline of who led when with which epoch, and the table's rows
#      proving that no stale write landed.
#
# It cleans up after itself and exits non-zero if any of that did not happen.
#
#   scripts/demo.sh               # everything, from a fresh clone
#   scripts/demo.sh --no-build    # skip deps/build/install (CI: ctest cli.demo);
#                                 # PGLEASE names the binary (default build/client/cli/pglease)
#   scripts/demo.sh --sql-edition # the same story on the SQL edition (pg_lease_sql, no C),
#                                 # installed with psql -f by a database owner who is no superuser
#   scripts/demo.sh --partition   # and a leader on a host of its own cut off the network
#                                 # (root: a network namespace, nftables; scripts/demo_partition.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

build=1
edition=pg_lease
partition=0
for arg in "$@"; do
	case $arg in
	--no-build) build=0 ;;
	--sql-edition) edition=pg_lease_sql ;;
	--partition) partition=1 ;;
	-h | --help)
		sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "demo.sh: unknown argument: $arg (try --help)" >&2
		exit 2
		;;
	esac
done

if [ $build = 1 ]; then
	scripts/deps.sh demo
	bdir=${PGLEASE_BUILD_DIR:-$root/build}
	start=$SECONDS
	echo "demo: building the extension and the pglease command in $bdir ..."
	cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPGLEASE_BUILD_TESTS=OFF >/dev/null
	cmake --build "$bdir" --target pglease -j "$(nproc)" >/dev/null
	make -s -f Makefile.pgxs >/dev/null
	sudo=()
	[ "$(id -u)" -ne 0 ] && sudo=(sudo)
	"${sudo[@]}" make -s -f Makefile.pgxs install >/dev/null
	echo "demo: built and installed in $((SECONDS - start)) s"
	PGLEASE=$bdir/client/cli/pglease
fi
PGLEASE=${PGLEASE:-$root/build/client/cli/pglease}
[ -x "$PGLEASE" ] || { echo "demo.sh: no pglease binary at $PGLEASE (build first, or set PGLEASE)" >&2; exit 1; }

source tests/harness/pg_cluster.sh
if [ $partition = 1 ]; then
	# The server listens on the link of host `cut` too (the scene's leader).
	[ "$(id -u)" -eq 0 ] || { echo "demo.sh: --partition needs root (network namespaces)" >&2; exit 1; }
	source tests/harness/netns.sh
	net_host cut
	trap 'net_destroy_all; pg_cluster_stop_all' EXIT # until cleanup() below takes over
	pg_cluster_init demo
	echo "host all all 10.231.0.0/16 trust" | pg_as_owner tee -a "$(pg_cluster_dir demo)/data/pg_hba.conf" >/dev/null
	pg_cluster_start demo "-c listen_addresses=127.0.0.1,$(net_server_addr cut)"
else
	pg_cluster_start demo
fi

# --- helpers -------------------------------------------------------------------

LEASE=ledger-writer
TTL=2s
DIR=$(mktemp -d /tmp/pglease_demo.XXXXXX)
chmod 0777 "$DIR"
declare -A PID=()

cleanup()
{
	local w
	for w in "${!PID[@]}"; do
		kill -CONT "${PID[$w]}" 2>/dev/null || true
		kill -KILL "${PID[$w]}" 2>/dev/null || true
	done
	for f in "$DIR"/*.pgid; do
		[ -f "$f" ] || continue
		kill -CONT -"$(cat "$f")" 2>/dev/null || true
		kill -KILL -"$(cat "$f")" 2>/dev/null || true
	done
	[ $partition = 0 ] || net_destroy_all
	rm -rf "$DIR"
	pg_cluster_stop_all
}
trap cleanup EXIT

bold=$'\033[1m' dim=$'\033[2m' red=$'\033[31m' green=$'\033[32m' off=$'\033[0m'
if [ ! -t 1 ]; then bold='' dim='' red='' green='' off=''; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$off"; }
note() { printf '   %s\n' "$*"; }
good() { printf '   %s✔ %s%s\n' "$green" "$*" "$off"; }
fail()
{
	printf '\n%sdemo FAILED: %s%s\n' "$red" "$*" "$off" >&2
	for f in "$DIR"/*.err; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }
	done
	exit 1
}
value() { psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"; }
table() { psql -X -q -v ON_ERROR_STOP=1 -P footer=off -c "$1" | sed 's/^/   /'; }
holder() { value "SELECT coalesce(holder, '') FROM lease_status WHERE name = '$LEASE' AND valid"; }
epoch() { value "SELECT epoch FROM leases WHERE name = '$LEASE'"; }
now() { date +%s.%N; }
ms_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%d", (b - a) * 1000 }'; }

# wait_for SECONDS COMMAND...: retries COMMAND every 20 ms.
wait_for()
{
	local end
	end=$(awk -v t="$(now)" -v s="$1" 'BEGIN { printf "%.3f", t + s }')
	shift
	until "$@"; do
		awk -v t="$(now)" -v e="$end" 'BEGIN { exit !(t < e) }' || return 1
		sleep 0.02
	done
}
new_holder() { local h; h=$(holder); [ -n "$h" ] && [ "$h" != "$1" ]; }
# stop_all_workers: SIGTERM to every worker's pglease, then wait for each.
stop_all_workers()
{
	local w
	for w in "${!PID[@]}"; do
		kill -TERM "${PID[$w]}" 2>/dev/null || true
	done
	for w in "${!PID[@]}"; do
		wait "${PID[$w]}" 2>/dev/null || true
	done
	PID=()
}

# The job every worker runs under `pglease run`: append a row every 200 ms
# with plain psql, to the ledger and to its copy in a second database.
# pglease puts `-c pg_lease.epoch=<epoch>` in PGOPTIONS, so the fence
# trigger stamps each row with the worker's epoch, and refuses it once that
# epoch is not the current, unexpired grant (in `reports`: once it is below
# the floor the next leader raised there). Refusals go to logs.
JOB='echo $$ > "$DIR/$PGLEASE_HOLDER.pgid"
while :; do
	psql -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=verbose \
		-c "INSERT INTO ledger (worker) VALUES ('"'"'$PGLEASE_HOLDER'"'"')" 2>>"$DIR/$PGLEASE_HOLDER.refused" >/dev/null || true
	psql -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -d reports \
		-c "INSERT INTO ledger_copy (worker) VALUES ('"'"'$PGLEASE_HOLDER'"'"')" 2>>"$DIR/$PGLEASE_HOLDER.refused-reports" >/dev/null || true
	sleep 0.2
done'

# Each worker's pglease serves /healthz and /metrics on a port the kernel
# picks (--http 127.0.0.1:0; a port chosen here could be taken before it
# binds) and prints at start: http_port reads the newest one.
start_worker()
{
	DIR=$DIR "$PGLEASE" run --lease "$LEASE" --ttl "$TTL" --kill-after 500ms --identity "$1" \
		--downstream "dbname=reports" --http 127.0.0.1:0 -- sh -c "$JOB" >>"$DIR/$1.out" 2>>"$DIR/$1.err" &
	PID[$1]=$!
}
http_port()
{
	sed -n 's|.*serving /healthz and /metrics on http://127.0.0.1:\([0-9]*\).*|\1|p' "$DIR/$1.err" | tail -1
}

# http_get PORT PATH: the reply's status line and body (bash's /dev/tcp).
http_get()
{
	exec 5<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&5
	cat <&5 | tr -d '\r'
	exec 5<&-
}

# --- the story -------------------------------------------------------------------

# install_edition DB: pg_lease in DB, in the demo's edition.
install_edition()
{
	if [ "$edition" = pg_lease_sql ]; then
		psql -X -q -v ON_ERROR_STOP=1 -d "$1" -f "$DIR/pg_lease_sql.sql" >/dev/null
	else
		psql -X -q -v ON_ERROR_STOP=1 -d "$1" -c "CREATE EXTENSION pg_lease"
	fi
}
if [ "$edition" = pg_lease_sql ]; then
	# As on a managed service: a database owner who is no superuser
	# (CREATEDB for the second database; pg_signal_backend to end a stalled
	# leader's writers) installs the edition with psql -f.
	psql -X -q -v ON_ERROR_STOP=1 -c "CREATE ROLE demo_owner LOGIN CREATEDB" \
		-c "GRANT pg_signal_backend TO demo_owner" -c "CREATE DATABASE app OWNER demo_owner"
	export PGUSER=demo_owner PGDATABASE=app
	source scripts/lib/sql_edition.sh
	sql_edition_psql_script "$DIR/pg_lease_sql.sql"
fi

say "A throwaway PostgreSQL 15 on 127.0.0.1:$PGPORT; $edition installed; a fenced table"
install_edition "$PGDATABASE"
"$PGLEASE" status --server | sed 's/^/   /'
psql -X -q -v ON_ERROR_STOP=1 \
	-c "CREATE TABLE ledger (id bigserial PRIMARY KEY, worker text, epoch bigint, at timestamptz DEFAULT clock_timestamp())"
"$PGLEASE" fence ledger --lease "$LEASE" 2>&1 | sed 's/^/   /'
note "every INSERT into ledger must carry the current epoch of lease '$LEASE', or it is refused"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE reports"
STORE=$(value "SELECT lease_store_id()")
install_edition reports
psql -X -q -v ON_ERROR_STOP=1 -d reports \
	-c "CREATE TABLE ledger_copy (id bigserial PRIMARY KEY, worker text, epoch bigint, at timestamptz DEFAULT clock_timestamp())" \
	-c "SELECT lease_fence('ledger_copy', '$LEASE', store => '$STORE')" >/dev/null
note "a second database, reports: ledger_copy is fenced by the floor of '$LEASE' of store $STORE"
note "(every worker runs with --downstream dbname=reports: a new leader raises that floor before its job starts)"

say "Three workers start the same job under: pglease run --lease $LEASE --ttl $TTL -- sh -c '<append rows with psql>'"
for w in worker-a worker-b worker-c; do
	start_worker "$w"
done
wait_for 10 bash -c "[ -n \"\$(psql -X -A -t -c \"SELECT holder FROM lease_status WHERE name = '$LEASE' AND valid\")\" ]" ||
	fail "nobody acquired the lease"
L1=$(holder)
E1=$(epoch)
note "$L1 leads with epoch $E1; the other two wait (woken by NOTIFY or at the expiry, no polling)"
wait_for 10 bash -c "[ \$(psql -X -A -t -c \"SELECT count(*) FROM ledger\") -ge 4 ]" || fail "the leader's rows did not land"
sleep 0.5
"$PGLEASE" status "$LEASE" | sed 's/^/   /'
table "SELECT worker, epoch, count(*) AS rows FROM ledger GROUP BY 1, 2"
note "health checks (pglease run --http): a load balancer or probe sends work to the leader only"
healthy=0
for w in worker-a worker-b worker-c; do
	reply=$(http_get "$(http_port "$w")" /healthz)
	printf '   %s  GET /healthz -> %s\n' "$w" "$(head -1 <<<"$reply" | cut -d' ' -f2-) $(tail -1 <<<"$reply")"
	case $reply in "HTTP/1.1 200"*) healthy=$((healthy + 1)) ;; esac
done
[ "$healthy" = 1 ] || fail "expected exactly one healthy worker, got $healthy"
note "and Prometheus metrics, from $L1's GET /metrics:"
http_get "$(http_port "$L1")" /metrics | grep -E '^pglease_(leader|epoch|renewals_total|renew_failures_total|lease_transitions)' | sed 's/^/   /'

say "$L1 freezes: SIGSTOP on its pglease and on its job's process group, longer than the ttl ($TTL)"
PGID1=$(cat "$DIR/$L1.pgid")
kill -STOP "${PID[$L1]}"
kill -STOP -"$PGID1"
paused_at=$(now)
wait_for 10 new_holder "$L1" || fail "no follower took over from the paused leader"
L2=$(holder)
E2=$(epoch)
[ "$E2" -gt "$E1" ] || fail "the new epoch $E2 is not larger than $E1"
note "after $(ms_since "$paused_at") ms, $L2 took over with epoch $E2 > $E1 (the lease expired on the server's clock)"
"$PGLEASE" status "$LEASE" | sed 's/^/   /'
sleep 0.3

say "$L1 wakes up (its job first, the worst case): it still believes it leads and writes"
kill -CONT -"$PGID1"
wait_for 10 grep -q "LS001" "$DIR/$L1.refused" || fail "the stale write was not refused with LS001"
grep -E "^(ERROR|DETAIL)" "$DIR/$L1.refused" | head -2 | sed "s/^/   $red/; s/\$/$off/"
good "refused by the database itself: SQLSTATE LS001, nothing written"
wait_for 10 grep -q "LS001" "$DIR/$L1.refused-reports" || fail "the stale write to reports was not refused with LS001"
grep -E "^(ERROR|DETAIL)" "$DIR/$L1.refused-reports" | head -2 | sed "s/^/   $red/; s/\$/$off/"
psql -X -q -P footer=off -d reports -c "SELECT store, name, epoch AS floor FROM lease_floors" | sed 's/^/   (reports) /'
good "and in the second database: below the floor $L2 raised there before its job started (LS001)"
kill -CONT "${PID[$L1]}"
rc=0
wait "${PID[$L1]}" || rc=$?
[ "$rc" -eq 76 ] || fail "the stale leader's pglease exited $rc, not 76"
grep -E "lost lease|deadline passed|SIGKILL" "$DIR/$L1.err" | sed "s/^/   $dim/; s/\$/$off/"
wait_for 5 bash -c "! kill -0 -$PGID1 2>/dev/null" || fail "the stale leader's job survived"
good "its pglease noticed on the monotonic clock that its deadline had passed, killed the job, and exited 76"
note "(its supervisor restarts it; it queues as a follower)"
rm -f "$DIR/$L1.pgid"
start_worker "$L1"

sleep 0.6
say "$L2 crashes: SIGKILL on its pglease and its job"
PGID2=$(cat "$DIR/$L2.pgid")
killed_at=$(now)
kill -KILL "${PID[$L2]}"
kill -KILL -"$PGID2" 2>/dev/null || true
wait "${PID[$L2]}" 2>/dev/null || true
rm -f "$DIR/$L2.pgid"
wait_for 10 new_holder "$L2" || fail "no follower took over from the crashed leader"
L3=$(holder)
E3=$(epoch)
[ "$E3" -gt "$E2" ] || fail "the new epoch $E3 is not larger than $E2"
granted=$(value "SELECT extract(epoch FROM time) FROM lease_events WHERE name = '$LEASE' AND epoch = $E3 AND event IN ('acquired', 'takeover')")
failover=$(awk -v a="$killed_at" -v b="$granted" 'BEGIN { printf "%d", (b - a) * 1000 }')
good "failover: $L3 leads with epoch $E3, $failover ms after the SIGKILL (bound: ttl $TTL after $L2's last renewal)"
start_worker "$L2"

sleep 0.6
say "$L3 is stopped gracefully (SIGTERM to its pglease): the job ends, the lease is released"
stopped_at=$(now)
kill -TERM "${PID[$L3]}"
rc=0
wait "${PID[$L3]}" || rc=$?
[ "$rc" -eq 143 ] || [ "$rc" -eq 0 ] || fail "$L3's pglease exited $rc after SIGTERM"
wait_for 5 new_holder "$L3" || fail "nobody took over after the release"
L4=$(holder)
E4=$(epoch)
[ "$E4" -gt "$E3" ] || fail "the new epoch $E4 is not larger than $E3"
handover=$(value "SELECT round(extract(epoch FROM (g.time - r.time)) * 1000)::int FROM lease_events r, lease_events g
	WHERE r.name = '$LEASE' AND r.event = 'released' AND r.epoch = $E3 AND g.name = '$LEASE' AND g.epoch = $E4 AND g.event = 'acquired'")
[ -n "$handover" ] || fail "no release of epoch $E3 followed by a grant of $E4"
good "hand-over: $L4 leads with epoch $E4, $handover ms after $L3's release ($(ms_since "$stopped_at") ms after the SIGTERM, including the job's exit)"
sleep 0.6

[ $partition = 0 ] || source scripts/demo_partition.sh

say "Everyone stops"
stop_all_workers
[ -z "$(holder)" ] || fail "the lease is still held after every worker stopped"
good "the last leader released the lease on its way out"

say "Timeline of lease '$LEASE' (lease_events, server clock)"
table "SELECT to_char(time - min(time) OVER (), 'SS.MS') || ' s' AS at, event, holder, epoch
	FROM lease_events WHERE name = '$LEASE' ORDER BY id"

say "The ledger: rows per worker and epoch"
table "SELECT l.worker, l.epoch, count(*) AS rows,
	to_char(min(l.at) - (SELECT min(time) FROM lease_events WHERE name = '$LEASE'), 'SS.MS') || ' s' AS first,
	to_char(max(l.at) - (SELECT min(time) FROM lease_events WHERE name = '$LEASE'), 'SS.MS') || ' s' AS last
	FROM ledger l GROUP BY 1, 2 ORDER BY min(l.at)"
refused=$(grep -c "LS00[12]" "$DIR"/*.refused 2>/dev/null | awk -F: '{ s += $2 } END { print s + 0 }')
copy_stale=$(psql -X -q -A -t -d reports -c "SELECT count(*) FROM ledger_copy c WHERE c.epoch < (SELECT max(epoch) FROM ledger_copy d WHERE d.at < c.at)")
[ "$copy_stale" = 0 ] || fail "$copy_stale rows in reports were written with an epoch below one written before them"

wrong=$(value "SELECT count(*) FROM ledger l WHERE NOT EXISTS (SELECT 1 FROM lease_events g
	WHERE g.name = '$LEASE' AND g.event IN ('acquired', 'takeover') AND g.epoch = l.epoch AND g.holder = l.worker)")
stale=$(value "SELECT count(*) FROM ledger l WHERE EXISTS (SELECT 1 FROM lease_events g
	WHERE g.name = '$LEASE' AND g.event IN ('acquired', 'takeover') AND g.epoch > l.epoch AND g.time <= l.at)")
[ "$wrong" = 0 ] || fail "$wrong rows carry an epoch that was not their writer's grant"
[ "$stale" = 0 ] || fail "$stale rows were written with an epoch after a newer one was granted"
[ "$refused" -gt 0 ] || fail "no refused write was recorded"
good "every row carries its writer's own epoch, and none was written after a newer epoch was granted"
good "$refused write(s) by a stale leader were refused (LS001/LS002) and are not in the table"

say "Demo finished: failover ${failover} ms after SIGKILL, hand-over ${handover} ms after release, stale writes refused"
