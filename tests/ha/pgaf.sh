#!/usr/bin/env bash
# The HA suite under pg_auto_failover 2.0 (issue 51): pg_lease on a
# monitor and two synchronous nodes, built as pg_auto_failover's docs say,
# with the same writers and checker as the Patroni suite.
#
#   tests/ha/pgaf.sh [--faults switchover,crash-pg,crash,...]
#                    [--lease-ttl-ms 3000] [--out DIR] [--async]
#                    [--monitor-set NAME=VALUE]...   # the monitor's postgresql.conf
#                    [--keeper-set SECTION.OPTION=VALUE]...  # pg_autoctl config set, each node
#
# One monitor (`pg_autoctl create monitor`) and two nodes (`pg_autoctl
# create postgres`, then `pg_autoctl run`), each on a free loopback port,
# with the defaults: number_sync_standbys 0, replication quorum true and
# candidate priority 50 on both, so the primary has
# synchronous_standby_names = 'ANY 1 (<the standby>)' while its standby is
# healthy (--async: replication quorum false on both, so no standby is
# synchronous, and the check counts losses instead of failing on them).
# pg_lease is created on the primary; two C++ electors and two
# `pglease run` supervisors write fenced rows through the multi-host
# connection string (tests/ha/drivers.sh). Faults, one after another, each
# once the formation is healthy again (primary + secondary, a synchronous
# standby named):
#   switchover  `pg_autoctl perform switchover`;
#   crash-pg    kill -9 of the primary's postmaster, its keeper left running;
#   crash       kill -9 of the primary node: its `pg_autoctl run` and every
#               process under it, postgres included; restarted once another
#               node is primary.
# Then tests/ha/check.py checks the history against the surviving primary
# (no --allow-loss: an acknowledged write or grant missing fails the run)
# and prints, per fault, the time to the next acknowledged fenced write.
#
# Needs root (pg_autoctl and PostgreSQL run as postgres), the system's
# pg_lease, PGLEASE / PGLEASE_FAULT naming the built binaries (ctest sets
# them); installs postgresql-15-auto-failover and pg-auto-failover-cli when
# missing, and fails when it cannot.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/free_port.sh"
source "$here/drivers.sh"

PGAF_BIN=/usr/lib/postgresql/15/bin
PGAF_NODES=(n1 n2)
FAULTS=switchover,crash-pg,crash LEASE_TTL_MS=3000 OUT=
MONITOR_SET=() KEEPER_SET=() QUORUM=true
while [ $# -gt 0 ]; do
	case $1 in
	--faults) FAULTS=$2; shift 2 ;;
	--lease-ttl-ms) LEASE_TTL_MS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--monitor-set) MONITOR_SET+=("$2"); shift 2 ;;
	--keeper-set) KEEPER_SET+=("$2"); shift 2 ;;
	--async) QUORUM=false; shift ;;
	*) echo "usage: see the head of $0" >&2; exit 2 ;;
	esac
done
: "${PGLEASE:?PGLEASE must name the pglease binary}"
: "${PGLEASE_FAULT:?PGLEASE_FAULT must name the pglease_fault binary}"
[ "$(id -u)" -eq 0 ] || { echo "FAIL: tests/ha needs root (pg_autoctl runs as postgres)" >&2; exit 1; }
# A restarted `pglease run` waits this long for a primary; pg_auto_failover
# leaves none for about 50 s after a node's crash, close to the default 60 s.
PGLEASE_RUN_OPTS=${PGLEASE_RUN_OPTS:---connect-timeout 120s}

declare -A PGAF_PORT PGAF_PID
HA_ROOT=$(mktemp -d /tmp/pg_lease_pgaf.XXXXXX)
chmod 0755 "$HA_ROOT"
OUT=${OUT:-$HA_ROOT/out}
mkdir -p "$OUT" "$HA_ROOT/sock" "$HA_ROOT/run"
chmod 0777 "$OUT"
chown postgres: "$HA_ROOT" "$HA_ROOT/sock" "$HA_ROOT/run"
# pg_autoctl as postgres, everything of its own under HA_ROOT: its
# configuration and state (HOME: XDG's defaults), its pid files
# (XDG_RUNTIME_DIR, /tmp/pg_autoctl otherwise), its sockets (PG_REGRESS_SOCK_DIR
# gives postgres -k, PGHOST is where pg_autoctl connects locally).
cat >"$HA_ROOT/as-postgres" <<SH
#!/bin/sh
exec setpriv --reuid=postgres --regid=postgres --init-groups -- env -i PATH="$PGAF_BIN:/usr/bin:/bin" HOME="$HA_ROOT" \\
	LANG=C.UTF-8 XDG_RUNTIME_DIR="$HA_ROOT/run" PG_REGRESS_SOCK_DIR="$HA_ROOT/sock" PGHOST="$HA_ROOT/sock" "\$@"
SH
chmod 0755 "$HA_ROOT/as-postgres"

# --- the formation ---------------------------------------------------------

pgaf_deps()
{
	command -v pg_autoctl >/dev/null && [ -f /usr/share/postgresql/15/extension/pgautofailover.control ] && return 0
	ha_log "installing postgresql-15-auto-failover pg-auto-failover-cli"
	"$here/../../scripts/apt-install.sh" postgresql-15-auto-failover pg-auto-failover-cli >/dev/null ||
		{ echo "FAIL: pg_auto_failover could not be installed" >&2; return 1; }
	command -v pg_autoctl >/dev/null || { echo "FAIL: no pg_autoctl after the install" >&2; return 1; }
}

pgaf_as_postgres() { "$HA_ROOT/as-postgres" "$@"; }

# pgaf_run NAME: `pg_autoctl run` of NAME (monitor, n1, n2), logged to
# NAME.log; PGAF_PID[NAME] is pg_autoctl's own pid (exec all the way).
pgaf_run()
{
	local name=$1
	(cd "$HA_ROOT" && exec "$HA_ROOT/as-postgres" pg_autoctl run --pgdata "$HA_ROOT/$name" >>"$HA_ROOT/$name.log" 2>&1) &
	PGAF_PID[$name]=$!
}

# pgaf_conf NAME [SETTING...]: what PostgreSQL gets beyond pg_autoctl's
# settings, after its include (postgresql.conf's first line), so these win.
# pg_autoctl sizes shared_buffers from the machine's memory (6 GB here):
# three servers on one test machine get 128 MB.
pgaf_conf()
{
	local name=$1
	shift
	printf '%s\n' '# tests/ha/pgaf.sh' 'shared_buffers = 128MB' "$@" >>"$HA_ROOT/$name/postgresql.conf"
}

pgaf_sql() # PORT SQL [DB]: one value from a node or the monitor, as postgres
{
	PGCONNECT_TIMEOUT=5 psql -X -A -t -q -h 127.0.0.1 -p "$1" -U postgres -d "${3:-postgres}" -c "$2" 2>/dev/null
}
pgaf_monitor_sql() { pgaf_sql "$PGAF_MONITOR_PORT" "$1" pg_auto_failover; }

# The formation as the monitor sees it: "n1 primary primary n2 secondary secondary".
pgaf_states()
{
	pgaf_monitor_sql "SELECT string_agg(nodename || ' ' || reportedstate || ' ' || goalstate, ' ' ORDER BY nodename) FROM pgautofailover.node"
}

# pgaf_writable NODE: NODE accepts a read-write session.
pgaf_writable()
{
	[ "$(psql -X -A -t -q "host=127.0.0.1 port=${PGAF_PORT[$1]} user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2" \
		-c 'SELECT 1' 2>/dev/null)" = 1 ]
}

# pgaf_primary: the node that the monitor has as primary (or wait_primary,
# which takes writes) and that accepts read-write sessions.
pgaf_primary()
{
	local n
	n=$(pgaf_monitor_sql "SELECT nodename FROM pgautofailover.node WHERE reportedstate IN ('primary', 'wait_primary') AND goalstate = reportedstate") || return 1
	[ -n "$n" ] && [ "$(wc -w <<<"$n")" = 1 ] && pgaf_writable "$n" && echo "$n"
}

pgaf_primary_is_not()
{
	local n
	n=$(pgaf_primary) && [ "$n" != "$1" ]
}

# pgaf_healthy: a primary and a secondary, each in the state the monitor
# assigned, and a standby the primary's commits wait for.
pgaf_healthy()
{
	local p s
	read -r -a s <<<"$(pgaf_states)" || return 1
	[ ${#s[@]} = 6 ] || return 1
	[ "${s[1]}" = "${s[2]}" ] && [ "${s[4]}" = "${s[5]}" ] || return 1
	[[ " ${s[1]} ${s[4]} " = *" primary "* && " ${s[1]} ${s[4]} " = *" secondary "* ]] || return 1
	p=$(pgaf_primary) || return 1
	[ "$QUORUM" = false ] && return 0
	[ -n "$(pgaf_sql "${PGAF_PORT[$p]}" 'SHOW synchronous_standby_names')" ] &&
		[ "$(pgaf_sql "${PGAF_PORT[$p]}" "SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')")" -ge 1 ]
}

pgaf_timeline()
{
	pgaf_sql "${PGAF_PORT[$1]}" "SELECT timeline_id FROM pg_control_checkpoint()" || echo "?"
}

pgaf_start()
{
	local n
	PGAF_MONITOR_PORT=$(pg_free_port)
	ha_log "monitor on 127.0.0.1:$PGAF_MONITOR_PORT, root $HA_ROOT"
	# Each create within 120 s (n2's includes its pg_basebackup).
	timeout 120 "$HA_ROOT/as-postgres" pg_autoctl create monitor --pgdata "$HA_ROOT/monitor" --pgport "$PGAF_MONITOR_PORT" \
		--hostname 127.0.0.1 --listen 127.0.0.1 --auth trust --no-ssl >>"$HA_ROOT/monitor.log" 2>&1 ||
		{ tail "$HA_ROOT/monitor.log" >&2; return 1; }
	pgaf_conf monitor
	local kv
	for kv in "${MONITOR_SET[@]}"; do echo "$kv" >>"$HA_ROOT/monitor/postgresql.conf"; done
	pgaf_run monitor
	ha_wait 30 pgaf_monitor_sql "SELECT 1 FROM pgautofailover.formation" >/dev/null ||
		{ tail "$HA_ROOT/monitor.log" >&2; return 1; }
	PGAF_MONITOR="postgres://autoctl_node@127.0.0.1:$PGAF_MONITOR_PORT/pg_auto_failover?sslmode=disable"
	for n in "${PGAF_NODES[@]}"; do
		PGAF_PORT[$n]=$(pg_free_port)
		# n1 initializes a primary (state single); n2 registers as a
		# standby and clones it with pg_basebackup (n1's keeper running).
		timeout 120 "$HA_ROOT/as-postgres" pg_autoctl create postgres --pgdata "$HA_ROOT/$n" --pgport "${PGAF_PORT[$n]}" \
			--hostname 127.0.0.1 --listen 127.0.0.1 --name "$n" --auth trust --no-ssl --replication-quorum "$QUORUM" \
			--monitor "$PGAF_MONITOR" >>"$HA_ROOT/$n.log" 2>&1 || { tail "$HA_ROOT/$n.log" >&2; return 1; }
		# pg_lease preloaded (docs/operations.md), beside the library
		# pg_autoctl preloads; n2 gets n1's postgresql.conf.
		[ "$n" = n1 ] && pgaf_conf n1 "shared_preload_libraries = 'pg_stat_statements,pg_lease'"
		for kv in "${KEEPER_SET[@]}"; do
			pgaf_as_postgres pg_autoctl config set --pgdata "$HA_ROOT/$n" "${kv%%=*}" "${kv#*=}" >/dev/null
		done
		pgaf_run "$n"
		[ "$n" = n1 ] && { ha_wait 60 pgaf_writable n1 || { tail "$HA_ROOT/n1.log" >&2; return 1; }; }
	done
	ha_wait 120 pgaf_healthy || { ha_log "formation not healthy: $(pgaf_states)"; return 1; }
	HA_HOSTS=127.0.0.1,127.0.0.1
	HA_PORTS=${PGAF_PORT[n1]},${PGAF_PORT[n2]}
	HA_CONNINFO="host=$HA_HOSTS port=$HA_PORTS user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2"
	ha_log "formation up: pg ports $HA_PORTS; $(pgaf_states)"
}

# The pids of a service: its `pg_autoctl run` and every process under it
# (pg_autoctl keeps postgres as its own child).
pgaf_tree()
{
	local p
	echo "$1"
	for p in $(pgrep -P "$1" || true); do pgaf_tree "$p"; done
}

pgaf_stop_all()
{
	local name pids pm
	set +e # runs from traps: every step, whatever failed before
	for name in "${PGAF_NODES[@]}" monitor; do
		[ -n "${PGAF_PID[$name]:-}" ] && kill -TERM "${PGAF_PID[$name]}" 2>/dev/null
	done
	# pg_autoctl stops postgres (fast) on SIGTERM: 20 s at most, then SIGKILL.
	for _ in $(seq 1 100); do
		pids=
		for name in "${PGAF_NODES[@]}" monitor; do
			[ -n "${PGAF_PID[$name]:-}" ] && kill -0 "${PGAF_PID[$name]}" 2>/dev/null && pids=1
		done
		[ -z "$pids" ] && break
		sleep 0.2
	done
	for name in "${PGAF_NODES[@]}" monitor; do
		# shellcheck disable=SC2086
		[ -n "${PGAF_PID[$name]:-}" ] && pids=$(pgaf_tree "${PGAF_PID[$name]}") &&
			kill -KILL $pids 2>/dev/null
		pm=$(head -1 "$HA_ROOT/$name/postmaster.pid" 2>/dev/null)
		# shellcheck disable=SC2046
		[ -n "$pm" ] && [ "$(ps -o user= -p "$pm" 2>/dev/null)" = postgres ] &&
			grep -q -- "$HA_ROOT/$name" "/proc/$pm/cmdline" 2>/dev/null && kill -KILL $(pgaf_tree "$pm") 2>/dev/null
	done
	wait 2>/dev/null
	true
}

ha_on_exit pgaf_stop_all
pgaf_deps
pgaf_start
ha_client_env

# How long a crashed primary may stay unreplaced (check.py's L1 bound adds
# the lease ttl + 5 s): the monitor acts once the node has not reported for
# node_considered_unhealthy_timeout and has failed a health check (one every
# health_check_period, then health_check_max_retries retries
# health_check_retry_delay apart, each up to health_check_timeout), then
# gives the old primary primary_demote_timeout before the promoted node
# takes writes.
read -r period retries delay timeout unhealthy demote < <(pgaf_monitor_sql "SELECT string_agg(setting, ' ' ORDER BY array_position(
	ARRAY['health_check_period', 'health_check_max_retries', 'health_check_retry_delay', 'health_check_timeout',
	'node_considered_unhealthy_timeout', 'primary_demote_timeout'], substr(name, 16)))
	FROM pg_settings WHERE substr(name, 16) IN ('health_check_period', 'health_check_max_retries', 'health_check_retry_delay',
	'health_check_timeout', 'node_considered_unhealthy_timeout', 'primary_demote_timeout') AND name LIKE 'pgautofailover.%'")
detect_ms=$((period + retries * (delay + timeout)))
[ "$unhealthy" -gt "$detect_ms" ] && detect_ms=$unhealthy
failover_s=$(((detect_ms + demote) / 1000 + 2))
sync_names=$(pgaf_sql "${PGAF_PORT[$(pgaf_primary)]}" 'SHOW synchronous_standby_names')
cat >"$OUT/settings.json" <<JSON
{"title":"pg_auto_failover $(pg_autoctl --version | awk 'NR == 1 {print $3}'), a monitor and 2 nodes, number_sync_standbys $(pgaf_monitor_sql "SELECT number_sync_standbys FROM pgautofailover.formation WHERE formationid = 'default'"), synchronous_standby_names $sync_names, synchronous_commit on",
 "manager":"pg_auto_failover","failover_s":$failover_s,"lease_ttl_ms":$LEASE_TTL_MS,"faults":"$FAULTS",
 "health_check_period_ms":$period,"health_check_max_retries":$retries,"health_check_retry_delay_ms":$delay,
 "health_check_timeout_ms":$timeout,"node_considered_unhealthy_timeout_ms":$unhealthy,"primary_demote_timeout_ms":$demote,
 "monitor_set":"${MONITOR_SET[*]}","keeper_set":"${KEEPER_SET[*]}"}
JSON

# --- faults ----------------------------------------------------------------

# pgaf_fault FAULT PRIMARY TIMELINE (for ha_suite, tests/ha/drivers.sh)
pgaf_fault()
{
	local f=$1 p=$2 tl=$3 np pm
	case $f in
	switchover)
		fault_log "switchover from $p timeline $tl"
		# pg_autoctl's own wait is 60 s; the monitor goes on without it.
		timeout 90 "$HA_ROOT/as-postgres" pg_autoctl perform switchover --monitor "$PGAF_MONITOR" >>"$HA_ROOT/switchover.log" 2>&1 || true
		ha_wait 60 pgaf_primary_is_not "$p" || { ha_log "no new primary after switchover from $p: $(pgaf_states)"; exit 1; }
		;;
	crash-pg)
		pm=$(head -1 "$HA_ROOT/$p/postmaster.pid")
		kill -KILL "$pm"
		fault_log "crash-pg $p timeline $tl (postmaster $pm)"
		# The keeper restarts postgres at once; whether the monitor saw it
		# down first (then it fails over) is a race: either ends healthy.
		sleep 3
		ha_wait 60 pgaf_primary >/dev/null || { ha_log "no primary after crash-pg of $p: $(pgaf_states)"; exit 1; }
		;;
	crash)
		# shellcheck disable=SC2046
		{ kill -KILL $(pgaf_tree "${PGAF_PID[$p]}"); wait "${PGAF_PID[$p]}"; } 2>/dev/null || true
		fault_log "crash $p timeline $tl"
		ha_wait $((failover_s + 30)) pgaf_primary_is_not "$p" || { ha_log "no new primary after crash of $p: $(pgaf_states)"; exit 1; }
		;;
	*) ha_log "unknown fault $f"; exit 2 ;;
	esac
	np=$(pgaf_primary)
	if [ "$np" = "$p" ]; then
		fault_log "restarted in place $np timeline $(pgaf_timeline "$np"); $(pgaf_states)"
	else
		fault_log "promoted $np timeline $(pgaf_timeline "$np"); $(pgaf_states)"
	fi
	if [ "$f" = crash ]; then
		sleep 2
		pgaf_run "$p"
		fault_log "restarted $p"
	fi
	ha_wait "${HA_HEAL_S:-90}" pgaf_healthy || { ha_log "formation not healthy after $f: $(pgaf_states)"; exit 1; }
	np=$(pgaf_primary)
	fault_log "healthy: primary $np timeline $(pgaf_timeline "$np"); $(pgaf_states)"
	sleep 4 # writes on the new primary before the next fault
}

pgaf_final()
{
	pgaf_as_postgres pg_autoctl show events --monitor "$PGAF_MONITOR" --count 100 >"$OUT/events.txt" 2>&1 || true
}

# --- the writers, the faults, the check -------------------------------------

check_opts=()
[ "$QUORUM" = false ] && check_opts+=(--allow-loss)
ha_suite "$FAULTS" pgaf "${check_opts[@]}"
