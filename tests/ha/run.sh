#!/usr/bin/env bash
# The HA suite (issue 16): pg_lease under Patroni 3.0.2 with real failovers.
#
#   tests/ha/run.sh [--mode sync|async] [--dcs etcd3|etcd] [--strict]
#                   [--faults crash,crash-lag,switchover,pause,...]
#                   [--pause-seconds 15] [--lag-seconds 3]
#                   [--lease-ttl-ms 3000] [--out DIR] [--allow-loss]
#
# One etcd and three Patroni nodes (tests/ha/lib.sh), pg_lease created on the
# leader, two fenced tables. Two C++ electors and two `pglease run`
# supervisors write fenced rows through the multi-host connection string
# (tests/ha/drivers.sh, shared with tests/ha/pgaf.sh).
# Faults run one after another, each after the cluster is healthy again
# (a sync standby present in synchronous mode). Then tests/ha/check.py checks
# the recorded history against the surviving primary.
#
# Needs root (Patroni and PostgreSQL run as postgres), the system's pg_lease,
# and PGLEASE / PGLEASE_FAULT naming the built binaries (ctest sets them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

MODE=sync DCS=etcd3 FAULTS=crash,switchover PAUSE_S=$((HA_TTL + 5)) LAG_S=3 LEASE_TTL_MS=3000 OUT= ALLOW_LOSS=0
while [ $# -gt 0 ]; do
	case $1 in
	--mode) MODE=$2; shift 2 ;;
	--dcs) DCS=$2; shift 2 ;;
	--strict) HA_STRICT=true; shift ;;
	--faults) FAULTS=$2; shift 2 ;;
	--pause-seconds) PAUSE_S=$2; shift 2 ;;
	--lag-seconds) LAG_S=$2; shift 2 ;;
	--lease-ttl-ms) LEASE_TTL_MS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--allow-loss) ALLOW_LOSS=1; shift ;;
	*) echo "usage: see the head of $0" >&2; exit 2 ;;
	esac
done
: "${PGLEASE:?PGLEASE must name the pglease binary}"
: "${PGLEASE_FAULT:?PGLEASE_FAULT must name the pglease_fault binary}"
[ "$(id -u)" -eq 0 ] || { echo "FAIL: tests/ha needs root (Patroni runs as postgres)" >&2; exit 1; }

HA_ROOT=$(mktemp -d /tmp/pg_lease_ha.XXXXXX)
OUT=${OUT:-$HA_ROOT/out}
mkdir -p "$OUT"
chmod 0777 "$OUT"
ha_on_exit ha_stop_all

ha_deps
ha_start "$MODE" "$DCS"
ha_client_env
cat >"$OUT/settings.json" <<JSON
{"mode":"$MODE","dcs":"$DCS","synchronous_mode_strict":$HA_STRICT,"synchronous_commit":"on",
 "patroni_ttl_s":$HA_TTL,"loop_wait_s":$HA_LOOP_WAIT,"retry_timeout_s":$HA_RETRY_TIMEOUT,
 "maximum_lag_on_failover":$HA_MAX_LAG,"lease_ttl_ms":$LEASE_TTL_MS,"faults":"$FAULTS","pause_s":$PAUSE_S}
JSON

# --- faults ----------------------------------------------------------------

# ha_fault FAULT PRIMARY TIMELINE (for ha_suite, tests/ha/drivers.sh)
ha_fault()
{
	local f=$1 p=$2 tl=$3 np flushed optime pm walsnd
	case $f in
	crash)
		flushed=$(ha_wal_flushed "$p" || true) optime=$(ha_dcs_optime || true)
		ha_crash "$p"
		fault_log "crash $p timeline $tl"
		ha_wait 60 ha_primary_is_not "$p" || { ha_log "no new primary after crash of $p"; exit 1; }
		np=$(ha_primary)
		fault_log "promoted $np timeline $(ha_timeline "$np")"
		fault_log "wal crash flushed ${flushed:-?} dcs_optime ${optime:-?} switchpoint $(ha_promoted_switchpoint "$np" "$tl" || true)"
		sleep 2
		ha_start_node "$p"
		fault_log "restarted $p"
		;;
	crash-lag)
		# Standbys behind: the primary's WAL senders stopped for LAG_S s,
		# then kill -9 of the primary (asynchronous replication loses
		# what they had not received; synchronous replication blocks
		# commits meanwhile, so nothing acknowledged is missing).
		# (The primary's WAL senders are stopped, not the receivers: WAL
		# already in a receiver's socket buffer would still arrive.)
		pm=$(ha_postmaster_pid "$p")
		walsnd=($(ps -o pid=,args= --ppid "$pm" | awk '/walsender/ {print $1}'))
		kill -STOP "${walsnd[@]}" 2>/dev/null || true
		fault_log "primary's WAL senders stopped (${walsnd[*]}) for ${LAG_S}s"
		sleep "$LAG_S"
		flushed=$(ha_wal_flushed "$p" || true) optime=$(ha_dcs_optime || true)
		ha_crash "$p"
		fault_log "crash-lag $p timeline $tl"
		ha_wait 60 ha_primary_is_not "$p" || { ha_log "no new primary after crash of $p"; exit 1; }
		np=$(ha_primary)
		fault_log "promoted $np timeline $(ha_timeline "$np")"
		fault_log "wal crash-lag flushed ${flushed:-?} dcs_optime ${optime:-?} switchpoint $(ha_promoted_switchpoint "$np" "$tl" || true)"
		sleep 2
		ha_start_node "$p"
		fault_log "restarted $p"
		;;
	switchover)
		fault_log "switchover from $p timeline $tl"
		ha_switchover "$p"
		ha_wait 60 ha_primary_is_not "$p" || { ha_log "no new primary after switchover from $p"; exit 1; }
		np=$(ha_primary)
		fault_log "promoted $np timeline $(ha_timeline "$np")"
		;;
	pause)
		fault_log "pause $p timeline $tl for ${PAUSE_S}s"
		ha_pause "$p" "$PAUSE_S"
		fault_log "resumed $p; cluster: $(ha_cluster_json | jq -c '[.members[] | [.name, .role, .state, .timeline]]')"
		sleep 3
		fault_log "after 3s: $(ha_cluster_json | jq -c '[.members[] | [.name, .role, .state, .timeline]]')"
		;;
	*) ha_log "unknown fault $f"; exit 2 ;;
	esac
	if ! ha_wait "${HA_HEAL_S:-90}" ha_healthy "$MODE"; then
		# After a pause Patroni 3.0.2 may never get healthy again (see
		# docs/ha.md): go on to the check as long as there is a primary.
		fault_log "not healthy after $f: $(ha_cluster_json | jq -c '[.members[] | [.name, .role, .state, .timeline]]')"
		[ "$f" = pause ] && ha_wait 30 ha_primary >/dev/null || { ha_log "cluster not healthy after $f"; exit 1; }
		return 0
	fi
	np=$(ha_primary)
	fault_log "healthy: primary $np timeline $(ha_timeline "$np"); $(ha_cluster_json | jq -c '[.members[] | [.name, .role, .state, .timeline]]')"
	sleep 4 # writes on the new primary before the next fault
}

ha_final() { ha_cluster_json >"$OUT/cluster_final.json"; }

# --- the writers, the faults, the check -------------------------------------

check_opts=()
[ "$ALLOW_LOSS" = 1 ] && check_opts+=(--allow-loss)
ha_suite "$FAULTS" ha "${check_opts[@]}"
