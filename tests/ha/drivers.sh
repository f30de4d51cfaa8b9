# shellcheck shell=bash
# The HA suites' writers and their record (issue 16), whatever manages the
# cluster: sourced by tests/ha/run.sh (Patroni) and tests/ha/pgaf.sh
# (pg_auto_failover). Two leaders-to-be per lease write fenced rows through
# the multi-host connection string:
#   lease "el": two C++ electors (pglease_fault worker: pglease::elector +
#               run_fenced, every call recorded with its times);
#   lease "rl": two `pglease run` supervisors, each restarted like systemd's
#               Restart=always (RestartSec=100ms), whose job inserts a row
#               with psql every 50 ms (the epoch comes from PGOPTIONS).
# tests/ha/check.py then checks the recorded history against the surviving
# primary.
#
# The caller sets HA_ROOT (its temp directory), OUT (the record), HA_HOSTS,
# HA_PORTS and HA_CONNINFO (the multi-host string), LEASE_TTL_MS, and
# PGLEASE / PGLEASE_FAULT (the built binaries), then:
#
#   ha_on_exit STOP_ALL          # trap: drivers, then STOP_ALL; logs kept on failure
#   ha_client_env                # PG* variables for psql, the clock offset
#   ha_suite FAULTS M [--allow-loss]   # the writers, the faults, the check
#   fault_log WORDS...           # one line of faults.log (check.py reads it)
#
# ha_suite calls the cluster manager's functions, prefixed M: M_primary
# (the primary's name), M_timeline NODE, M_fault FAULT PRIMARY TIMELINE
# (one fault, until the cluster is healthy again), M_final (what else the
# record keeps).
#
# Every wait is bounded.

HA_DRIVER_PIDS=()

ha_log() { echo "[ha $(date +%T.%3N)] $*" >&2; }

# ha_wait SECONDS COMMAND...: retries COMMAND every 200 ms, bounded.
ha_wait()
{
	local deadline=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

# stop_drivers: the restart loops first (no new start), then what they
# started (pglease passes SIGTERM to its job, releases, exits), then the
# C++ workers; SIGKILL for whatever is left after 10 s.
stop_drivers()
{
	local p kids=() alive
	[ ${#HA_DRIVER_PIDS[@]} -eq 0 ] && return 0
	for p in "${HA_DRIVER_PIDS[@]}"; do
		# shellcheck disable=SC2207
		kids+=($(pgrep -P "$p" || true))
	done
	for p in "${HA_DRIVER_PIDS[@]}" "${kids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for _ in $(seq 1 50); do
		alive=0
		for p in "${HA_DRIVER_PIDS[@]}" "${kids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.2
	done
	for p in "${HA_DRIVER_PIDS[@]}" "${kids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	HA_DRIVER_PIDS=()
}

# ha_on_exit STOP_ALL: on exit, the writers, then the cluster (STOP_ALL);
# HA_ROOT (servers, logs, and OUT unless --out put it elsewhere: some
# 400 MB) is removed after a pass unless HA_KEEP is set.
ha_on_exit()
{
	HA_STOP_ALL=$1
	trap ha_exit_trap EXIT
	trap 'exit 130' INT TERM
}

ha_exit_trap()
{
	local rc=$?
	set +e # every step, whatever failed before
	stop_drivers
	"$HA_STOP_ALL"
	if [ "$rc" -ne 0 ]; then
		ha_log "failed ($rc); logs kept in $HA_ROOT"
	elif [ -z "${HA_KEEP:-}" ]; then
		rm -rf "$HA_ROOT"
	fi
}

# ha_client_env: psql and the writers reach whichever node is primary.
ha_client_env()
{
	export PGHOST=$HA_HOSTS PGPORT=$HA_PORTS PGUSER=postgres PGDATABASE=postgres PGTARGETSESSIONATTRS=read-write PGCONNECT_TIMEOUT=2
	# Realtime minus monotonic, to put the C++ workers' CLOCK_MONOTONIC times
	# and the shell's $EPOCHREALTIME on one axis.
	/usr/bin/python3 -c 'import time; print(time.time_ns() - time.monotonic_ns())' >"$OUT/mono_offset_ns"
}

# ha_schema: on the primary, pg_lease, two fenced tables and the order in
# which grants and writes committed (one sequence, from triggers).
ha_schema()
{
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
}

ha_start_drivers()
{
	local w
	# The C++ electors (lease "el").
	for w in cA cB; do
		"$PGLEASE_FAULT" worker --label=$w --lease=el --conninfo="$HA_CONNINFO" --history="$OUT/$w.jsonl" \
			--ttl="$LEASE_TTL_MS" --renew-deadline=$((LEASE_TTL_MS * 2 / 3)) --retry=250 \
			--write-interval=50 --duration=3600000 --seed=$RANDOM >"$OUT/$w.out" 2>&1 &
		HA_DRIVER_PIDS+=($!)
	done

	# The job of `pglease run` (lease "rl"): a fenced insert every 50 ms
	# through psql (the epoch in PGOPTIONS); each acknowledged insert is
	# logged with its epoch and the time of its acknowledgment.
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
	for w in rA rB; do
		ha_run_loop $w &
		HA_DRIVER_PIDS+=($!)
	done
}

# ha_run_loop LABEL: `pglease run` restarted 100 ms after each exit, like
# systemd's Restart=always; every start, exit code and stderr line is logged
# with its time. Bounded: 2000 starts.
ha_run_loop()
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

# ha_wait_writing: both leases have acknowledged fenced writes (60 s at
# most), then 3 s more of writes before the first fault.
ha_wait_writing()
{
	ha_wait 60 bash -c "[ -s '$OUT/job.acks' ] && grep -q '\"op\":\"write\".*\"r\":\"ok\"' '$OUT'/cA.jsonl '$OUT'/cB.jsonl" ||
		{ ha_log "drivers did not start writing"; tail -5 "$OUT"/*.out "$OUT"/*.stderr >&2 || true; return 1; }
	sleep 3
}

fault_log() { echo "$EPOCHREALTIME $*" >>"$OUT/faults.log"; ha_log "$*"; }

# ha_collect: stops the writers, then copies the surviving primary's grants
# and fenced rows, each with its commit order.
ha_collect()
{
	local t
	fault_log "stop"
	stop_drivers
	psql -X -q -A -t -v ON_ERROR_STOP=1 -c "COPY (SELECT json_build_object('id', e.id, 'event', e.event, 'name', e.name, 'holder', e.holder, 'epoch', e.epoch, 'time', extract(epoch FROM e.time), 'ord', coalesce(g.ord, -1)) FROM lease_events e LEFT JOIN grant_order g ON g.event_id = e.id ORDER BY e.id) TO STDOUT" >"$OUT/db_events.jsonl"
	for t in fw_el fw_rl; do
		psql -X -q -A -t -v ON_ERROR_STOP=1 -c "COPY (SELECT json_build_object('tbl', '$t', 'lease', w.lease, 'worker', w.worker, 'seq', w.seq, 'epoch', w.epoch, 'ord', coalesce(c.ord, -1)) FROM $t w LEFT JOIN commit_order c ON c.tbl = '$t' AND c.write_id = w.id) TO STDOUT"
	done >"$OUT/db_writes.jsonl"
}

# ha_check [--allow-loss]: the invariants and figures (tests/ha/check.py).
ha_check() { /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/check.py" "$OUT" "$@"; }

# ha_suite FAULTS M [CHECK OPTIONS]: pg_lease and the fenced tables on the
# primary, the writers, each fault of the comma-separated FAULTS in turn,
# then the record and its check.
ha_suite()
{
	local faults=$1 m=$2 f p tl
	shift 2
	ha_schema
	ha_start_drivers
	ha_wait_writing
	IFS=, read -r -a faults <<<"$faults"
	for f in "${faults[@]}"; do
		p=$("${m}_primary") || { ha_log "no primary before $f"; return 1; }
		tl=$("${m}_timeline" "$p")
		"${m}_fault" "$f" "$p" "$tl"
	done
	ha_collect
	p=$("${m}_primary")
	fault_log "final primary $p timeline $("${m}_timeline" "$p")"
	"${m}_final"
	ha_check "$@"
}
