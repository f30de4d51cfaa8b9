#!/usr/bin/env bash
# The HA suite (issue 16): pg_lease under Patroni 3.0.2 with real failovers.
#
#   tests/ha/run.sh [--mode sync|async] [--dcs etcd3|etcd] [--strict]
#                   [--faults crash,crash-lag,switchover,pause,...]
#                   [--pause-seconds 15] [--lag-seconds 3]
#                   [--lease-ttl-ms 3000] [--out DIR] [--allow-loss]
#
# One etcd and three Patroni nodes (tests/ha/lib.sh), pg_lease created on the
# leader, two fenced tables. Two leaders-to-be per lease write fenced rows
# through the multi-host connection string:
#   lease "el": two C++ electors (pglease_fault worker: pglease::elector +
#               run_fenced, every call recorded with its times);
#   lease "rl": two `pglease run` supervisors, each restarted like systemd's
#               Restart=always (RestartSec=100ms), whose job inserts a row
#               with psql every 50 ms (the epoch comes from PGOPTIONS).
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
DRIVER_PIDS=()

# stop_drivers: the restart loops first (no new start), then what they
# started (pglease passes SIGTERM to its job, releases, exits), then the
# C++ workers; SIGKILL for whatever is left after 10 s.
stop_drivers()
{
	local p kids=()
	[ ${#DRIVER_PIDS[@]} -eq 0 ] && return 0
	for p in "${DRIVER_PIDS[@]}"; do
		kids+=($(pgrep -P "$p" || true))
	done
	for p in "${DRIVER_PIDS[@]}" "${kids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for _ in $(seq 1 50); do
		alive=0
		for p in "${DRIVER_PIDS[@]}" "${kids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.2
	done
	for p in "${DRIVER_PIDS[@]}" "${kids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	DRIVER_PIDS=()
}

cleanup()
{
	local rc=$?
	set +e # every step, whatever failed before
	stop_drivers
	ha_stop_all
	if [ "$rc" -ne 0 ]; then
		ha_log "failed ($rc); logs kept in $HA_ROOT"
	elif [ -z "${HA_KEEP:-}" ] && [[ "$OUT" != "$HA_ROOT"/* ]]; then
		rm -rf "$HA_ROOT"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ha_deps
ha_start "$MODE" "$DCS"
export PGHOST=$HA_HOSTS PGPORT=$HA_PORTS PGUSER=postgres PGDATABASE=postgres PGTARGETSESSIONATTRS=read-write PGCONNECT_TIMEOUT=2
# Realtime minus monotonic, to put the C++ workers' CLOCK_MONOTONIC times
# and the shell's $EPOCHREALTIME on one axis.
/usr/bin/python3 -c 'import time; print(time.time_ns() - time.monotonic_ns())' >"$OUT/mono_offset_ns"
cat >"$OUT/settings.json" <<JSON
{"mode":"$MODE","dcs":"$DCS","synchronous_mode_strict":$HA_STRICT,"synchronous_commit":"on",
 "patroni_ttl_s":$HA_TTL,"loop_wait_s":$HA_LOOP_WAIT,"retry_timeout_s":$HA_RETRY_TIMEOUT,
 "maximum_lag_on_failover":$HA_MAX_LAG,"lease_ttl_ms":$LEASE_TTL_MS,"faults":"$FAULTS","pause_s":$PAUSE_S}
JSON

psql -X -q -v ON_ERROR_STOP=1 -o /dev/null <<'SQL'
CREATE EXTENSION pg_lease;
CREATE SEQUENCE ha_order;
CREATE TABLE commit_order (tbl text, write_id bigint, ord bigint NOT NULL DEFAULT nextval('ha_order'), PRIMARY KEY (tbl, write_id));
CREATE TABLE grant_order (event_id bigint PRIMARY KEY, ord bigint NOT NULL DEFAULT nextval('ha_order'));
CREATE FUNCTION ha_commit_order() RETURNS trigger LANGUAGE plpgsql SET search_path = public, pg_catalog AS $$
BEGIN INSERT INTO public.commit_order (tbl, write_id) VALUES (TG_TABLE_NAME, NEW.id); RETURN NULL; END $$;
CREATE FUNCTION ha_grant_order() RETURNS trigger LANGUAGE plpgsql SET search_path = public, pg_catalog AS $$
BEGIN INSERT INTO public.grant_order (event_id) VALUES (NEW.id); RETURN NULL; END $$;
CREATE TRIGGER ha_grant_order AFTER INSERT ON lease_events FOR EACH ROW EXECUTE FUNCTION ha_grant_order();
CREATE TABLE fw_el (id bigserial PRIMARY KEY, lease text NOT NULL, worker text NOT NULL, seq bigint NOT NULL,
	epoch bigint NOT NULL, slow boolean NOT NULL DEFAULT false, UNIQUE (worker, seq));
CREATE TABLE fw_rl (LIKE fw_el INCLUDING ALL);
CREATE CONSTRAINT TRIGGER ha_commit_order AFTER INSERT ON fw_el DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ha_commit_order();
CREATE CONSTRAINT TRIGGER ha_commit_order AFTER INSERT ON fw_rl DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ha_commit_order();
SELECT lease_fence('fw_el', 'el'), lease_fence('fw_rl', 'rl');
SQL

# --- drivers ---------------------------------------------------------------

# The C++ electors (lease "el").
for w in cA cB; do
	"$PGLEASE_FAULT" worker --label=$w --lease=el --conninfo="$HA_CONNINFO" --history="$OUT/$w.jsonl" \
		--ttl="$LEASE_TTL_MS" --renew-deadline=$((LEASE_TTL_MS * 2 / 3)) --retry=250 \
		--write-interval=50 --duration=3600000 --seed=$RANDOM >"$OUT/$w.out" 2>&1 &
	DRIVER_PIDS+=($!)
done

# The job of `pglease run` (lease "rl"): a fenced insert every 50 ms through
# psql (the epoch in PGOPTIONS); each acknowledged insert is logged with its
# epoch and the time of its acknowledgment.
cat >"$HA_ROOT/job.sh" <<'JOB'
# pglease_ha_job ROOT OUT LABEL
out=$2 w="$3.$$"
s=0
for _ in $(seq 1 100000); do
	s=$((s + 1))
	t0=$EPOCHREALTIME
	if e=$(psql -X -q -A -t -v ON_ERROR_STOP=1 -c "INSERT INTO fw_rl (lease, worker, seq) VALUES ('rl', '$w', $s) RETURNING epoch" 2>>"$out/job.err"); then
		echo "ok $w $s $e $t0 $EPOCHREALTIME $PGLEASE_EPOCH" >>"$out/job.acks"
	else
		echo "fail $w $s - $t0 $EPOCHREALTIME $PGLEASE_EPOCH" >>"$out/job.acks"
	fi
	sleep 0.05
done
JOB

# run_loop LABEL: `pglease run` restarted 100 ms after each exit, like
# systemd's Restart=always; every start, exit code and stderr line is logged
# with its time. Bounded: 2000 starts.
run_loop()
{
	local label=$1 rc
	for _ in $(seq 1 2000); do
		echo "start $EPOCHREALTIME" >>"$OUT/$label.runs"
		rc=0
		"$PGLEASE" -d "$HA_CONNINFO" run --lease rl --ttl "${LEASE_TTL_MS}ms" --identity "$label.$RANDOM" \
			${PGLEASE_RUN_OPTS:-} -- bash -c 'exec -a pglease_ha_job bash "$0" "$@"' "$HA_ROOT/job.sh" "$HA_ROOT" "$OUT" "$label" \
			2> >(while IFS= read -r l; do echo "$EPOCHREALTIME $l"; done >>"$OUT/$label.stderr") || rc=$?
		echo "exit $EPOCHREALTIME $rc" >>"$OUT/$label.runs"
		sleep 0.1
	done
}
for w in rA rB; do
	run_loop $w &
	DRIVER_PIDS+=($!)
done

# --- faults ----------------------------------------------------------------

fault_log() { echo "$EPOCHREALTIME $*" >>"$OUT/faults.log"; ha_log "$*"; }

ha_wait 60 bash -c "[ -s '$OUT/job.acks' ] && grep -q '\"op\":\"write\".*\"r\":\"ok\"' '$OUT'/cA.jsonl '$OUT'/cB.jsonl" ||
	{ ha_log "drivers did not start writing"; tail -5 "$OUT"/*.out "$OUT"/*.stderr >&2 || true; exit 1; }
sleep 3

IFS=, read -r -a fault_list <<<"$FAULTS"
for f in "${fault_list[@]}"; do
	p=$(ha_primary) || { ha_log "no primary before $f"; exit 1; }
	tl=$(ha_timeline "$p")
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
		continue
	fi
	np=$(ha_primary)
	fault_log "healthy: primary $np timeline $(ha_timeline "$np"); $(ha_cluster_json | jq -c '[.members[] | [.name, .role, .state, .timeline]]')"
	sleep 4 # writes on the new primary before the next fault
done

# --- stop the drivers, then check ------------------------------------------

fault_log "stop"
stop_drivers

p=$(ha_primary)
fault_log "final primary $p timeline $(ha_timeline "$p")"
psql -X -q -A -t -v ON_ERROR_STOP=1 -c "COPY (SELECT json_build_object('id', e.id, 'event', e.event, 'name', e.name, 'holder', e.holder, 'epoch', e.epoch, 'time', extract(epoch FROM e.time), 'ord', coalesce(g.ord, -1)) FROM lease_events e LEFT JOIN grant_order g ON g.event_id = e.id ORDER BY e.id) TO STDOUT" >"$OUT/db_events.jsonl"
for t in fw_el fw_rl; do
	psql -X -q -A -t -v ON_ERROR_STOP=1 -c "COPY (SELECT json_build_object('tbl', '$t', 'lease', w.lease, 'worker', w.worker, 'seq', w.seq, 'epoch', w.epoch, 'ord', coalesce(c.ord, -1)) FROM $t w LEFT JOIN commit_order c ON c.tbl = '$t' AND c.write_id = w.id) TO STDOUT"
done >"$OUT/db_writes.jsonl"
ha_cluster_json >"$OUT/cluster_final.json"
check_opts=()
[ "$ALLOW_LOSS" = 1 ] && check_opts+=(--allow-loss)
/usr/bin/python3 "$here/check.py" "$OUT" "${check_opts[@]}"
