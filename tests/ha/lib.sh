# One etcd and three Patroni nodes on loopback, for the HA suite (issue 16).
# Sourced by tests/ha/run.sh; bash, run as root (Patroni and PostgreSQL run
# as the postgres user, started with setpriv so that $! is Patroni's pid).
#
#   ha_deps                      # apt-get install patroni etc. when missing
#   ha_start sync|async etcd3|etcd
#   ha_primary                   # name of the node whose REST says primary
#   ha_crash n2 / ha_pause n2 SECONDS / ha_switchover
#   ha_stop_all                  # also on EXIT (the caller's trap calls it)
#
# Everything lives under $HA_ROOT (a fresh temp directory); ports are free
# loopback ports; every wait is bounded.

HA_BIN=${HA_BIN:-/usr/lib/postgresql/15/bin}
HA_NODES=(n1 n2 n3)
HA_TTL=${HA_TTL:-10}
HA_LOOP_WAIT=${HA_LOOP_WAIT:-1}
HA_RETRY_TIMEOUT=${HA_RETRY_TIMEOUT:-4}
HA_MAX_LAG=${HA_MAX_LAG:-1048576}
HA_STRICT=${HA_STRICT:-false}
declare -A HA_PG_PORT HA_API_PORT HA_PID
HA_ETCD_PID=

source "$(dirname "${BASH_SOURCE[0]}")/../harness/free_port.sh"
source "$(dirname "${BASH_SOURCE[0]}")/drivers.sh" # ha_log, ha_wait

# Installs what the suite needs on a fresh Debian 12 (CI); apt-get update
# only when something is missing.
ha_deps()
{
	local missing=()
	command -v patroni >/dev/null || missing+=(patroni)
	command -v etcd >/dev/null || missing+=(etcd-server)
	command -v jq >/dev/null || missing+=(jq)
	command -v curl >/dev/null || missing+=(curl)
	/usr/bin/python3 -c 'import etcd' 2>/dev/null || missing+=(python3-etcd)
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -eq 0 ] || { echo "ha: missing ${missing[*]} (run as root to install)" >&2; return 1; }
	ha_log "installing ${missing[*]}"
	"$(dirname "${BASH_SOURCE[0]}")/../../scripts/apt-install.sh" "${missing[@]}" >/dev/null
}

ha_as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }

ha_node_conf()
{
	local n=$1 mode=$2 dcs=$3 dir=$HA_ROOT/$1 sync=true
	[ "$mode" = async ] && sync=false
	cat >"$dir/patroni.yml" <<YML
scope: ha$$
name: $n
log: {level: INFO, dir: $dir, file_num: 2}
restapi: {listen: 127.0.0.1:${HA_API_PORT[$n]}, connect_address: 127.0.0.1:${HA_API_PORT[$n]}}
$dcs: {hosts: 127.0.0.1:$HA_ETCD_PORT}
bootstrap:
  dcs:
    ttl: $HA_TTL
    loop_wait: $HA_LOOP_WAIT
    retry_timeout: $HA_RETRY_TIMEOUT
    maximum_lag_on_failover: $HA_MAX_LAG
    synchronous_mode: $sync
    synchronous_mode_strict: $HA_STRICT
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_log_hints: 'on'
        synchronous_commit: 'on'
        fsync: 'off'
        max_connections: 60
        wal_keep_size: 256MB
        log_min_messages: warning
  initdb: [{encoding: UTF8}, {locale: C.UTF-8}, {auth: trust}]
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${HA_PG_PORT[$n]}
  connect_address: 127.0.0.1:${HA_PG_PORT[$n]}
  data_dir: $dir/data
  bin_dir: $HA_BIN
  pgpass: $dir/pgpass
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
  authentication:
    superuser: {username: postgres}
    replication: {username: postgres}
    rewind: {username: postgres}
  parameters: {unix_socket_directories: '$dir'}
YML
}

# ha_start_node N: starts (or restarts) Patroni of node N.
ha_start_node()
{
	local n=$1
	(cd "$HA_ROOT/$n" && exec setpriv --reuid=postgres --regid=postgres --init-groups -- \
		env -i PATH=/usr/bin:/bin HOME="$HA_ROOT/$n" LANG=C.UTF-8 patroni "$HA_ROOT/$n/patroni.yml" \
		>>"$HA_ROOT/$n/patroni.out" 2>&1) &
	HA_PID[$n]=$!
}

ha_start()
{
	local mode=$1 dcs=${2:-etcd3} n
	HA_DCS=$dcs
	HA_ROOT=${HA_ROOT:-$(mktemp -d /tmp/pg_lease_ha.XXXXXX)}
	chmod 0755 "$HA_ROOT"
	HA_ETCD_PORT=$(pg_free_port)
	local peer=$(pg_free_port)
	ha_log "etcd on 127.0.0.1:$HA_ETCD_PORT, root $HA_ROOT"
	mkdir -p "$HA_ROOT/etcd"
	local v2=()
	[ "$dcs" = etcd ] && v2=(--enable-v2=true)
	etcd --name e1 --data-dir "$HA_ROOT/etcd/data" \
		--listen-client-urls "http://127.0.0.1:$HA_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$HA_ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "e1=http://127.0.0.1:$peer" "${v2[@]}" >"$HA_ROOT/etcd/etcd.log" 2>&1 &
	HA_ETCD_PID=$!
	ha_wait 30 curl -sf "http://127.0.0.1:$HA_ETCD_PORT/health" -o /dev/null || { tail "$HA_ROOT/etcd/etcd.log" >&2; return 1; }
	for n in "${HA_NODES[@]}"; do
		mkdir -p "$HA_ROOT/$n"
		HA_PG_PORT[$n]=$(pg_free_port)
		HA_API_PORT[$n]=$(pg_free_port)
		while [ "${HA_API_PORT[$n]}" = "${HA_PG_PORT[$n]}" ]; do HA_API_PORT[$n]=$(pg_free_port); done
	done
	local try
	for n in "${HA_NODES[@]}"; do
		# A port picked free may be taken before Patroni binds it (other
		# harnesses on the machine): then pick again, at most 3 times.
		for try in 1 2 3; do
			ha_node_conf "$n" "$mode" "$dcs"
			chown -R postgres: "$HA_ROOT/$n"
			ha_start_node "$n"
			if ha_wait 20 curl -s -m 1 -o /dev/null "http://127.0.0.1:${HA_API_PORT[$n]}/liveness"; then
				break
			fi
			kill -KILL "${HA_PID[$n]}" 2>/dev/null || true
			ha_log "$n did not come up (try $try): $(tail -1 "$HA_ROOT/$n/patroni.out" 2>/dev/null)"
			[ "$try" = 3 ] && return 1
			rm -rf "$HA_ROOT/$n/data"
			HA_PG_PORT[$n]=$(pg_free_port)
			HA_API_PORT[$n]=$(pg_free_port)
		done
		[ "$n" = n1 ] && { ha_wait 60 ha_is_primary n1 || return 1; } # n1 bootstraps, the others clone it
	done
	ha_wait 120 ha_healthy "$mode" || { ha_log "cluster not healthy"; ha_cluster_json >&2; return 1; }
	HA_HOSTS=127.0.0.1,127.0.0.1,127.0.0.1
	HA_PORTS=${HA_PG_PORT[n1]},${HA_PG_PORT[n2]},${HA_PG_PORT[n3]}
	HA_CONNINFO="host=$HA_HOSTS port=$HA_PORTS user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2"
	ha_log "cluster up: pg ports $HA_PORTS"
}

# The cluster as Patroni's REST API of any live node sees it.
ha_cluster_json()
{
	local n
	for n in "${HA_NODES[@]}"; do
		curl -sf -m 1 "http://127.0.0.1:${HA_API_PORT[$n]}/cluster" && return 0
	done
	return 1
}

ha_is_primary() { curl -sf -m 1 "http://127.0.0.1:${HA_API_PORT[$1]}/primary" -o /dev/null; }

# ha_primary: the node that both holds the leader key and answers /primary.
ha_primary()
{
	local n
	n=$(ha_cluster_json | jq -r '.members[] | select(.role == "leader") | .name' 2>/dev/null) || return 1
	[ -n "$n" ] && ha_is_primary "$n" && echo "$n"
}

# ha_healthy MODE: a primary, the two others streaming, and (sync) a sync standby.
ha_healthy()
{
	local j
	j=$(ha_cluster_json) || return 1
	[ "$(jq '[.members[] | select(.role == "leader" and .state == "running")] | length' <<<"$j")" = 1 ] || return 1
	[ "$(jq '[.members[] | select(.role != "leader" and (.state == "streaming" or .state == "running") and (.lag // 0) != "unknown")] | length' <<<"$j")" = 2 ] || return 1
	if [ "$1" = sync ]; then
		[ "$(jq '[.members[] | select(.role == "sync_standby")] | length' <<<"$j")" -ge 1 ] || return 1
	fi
	ha_primary >/dev/null
}

ha_postmaster_pid() { head -1 "$HA_ROOT/$1/data/postmaster.pid" 2>/dev/null; }

# The pids of node N: Patroni, the postmaster and the postmaster's children.
ha_node_pids()
{
	local n=$1 pm
	echo "${HA_PID[$n]}"
	pm=$(ha_postmaster_pid "$n") || return 0
	[ -n "$pm" ] && kill -0 "$pm" 2>/dev/null || return 0
	echo "$pm"
	pgrep -P "$pm" || true
}

# ha_crash N: kill -9 of the whole node (Patroni detaches the postmaster).
ha_crash()
{
	local pids
	pids=$(ha_node_pids "$1")
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null || true
}

# ha_pause N SECONDS: SIGSTOP Patroni, the postmaster and its children, then SIGCONT.
ha_pause()
{
	local pids
	pids=$(ha_node_pids "$1")
	# shellcheck disable=SC2086
	kill -STOP $pids 2>/dev/null || true
	sleep "$2"
	# shellcheck disable=SC2086
	kill -CONT $pids 2>/dev/null || true
}

# ha_wal_flushed N: node N's flushed WAL position in bytes, an upper bound
# of what it can have acknowledged.
ha_wal_flushed()
{
	psql -X -A -t -q -h 127.0.0.1 -p "${HA_PG_PORT[$1]}" -U postgres -d postgres -c \
		"SELECT pg_wal_lsn_diff(pg_current_wal_flush_lsn(), '0/0')::bigint" 2>/dev/null
}

# ha_dcs_optime: the leader's WAL position as Patroni last published it in
# the DCS (the /status key). Patroni promotes no standby that is further
# behind it than maximum_lag_on_failover.
ha_dcs_optime()
{
	local key=/service/ha$$/status
	if [ "$HA_DCS" = etcd ]; then
		curl -sf -m 2 "http://127.0.0.1:$HA_ETCD_PORT/v2/keys$key" | jq -r '.node.value | fromjson | .optime'
	else
		curl -sf -m 2 -XPOST "http://127.0.0.1:$HA_ETCD_PORT/v3/kv/range" \
			-d "{\"key\":\"$(printf %s "$key" | base64 -w0)\"}" | jq -r '.kvs[0].value | @base64d | fromjson | .optime'
	fi
}

# ha_switchpoint N TL: where node N's history left timeline TL (its newest
# timeline history file), in bytes: the end of what it had received.
ha_switchpoint()
{
	psql -X -A -t -q -h 127.0.0.1 -p "${HA_PG_PORT[$1]}" -U postgres -d postgres -v tl="$2" 2>/dev/null <<'SQL'
SELECT pg_wal_lsn_diff(split_part(l, E'\t', 2)::pg_lsn, '0/0')::bigint
FROM regexp_split_to_table(pg_read_file('pg_wal/' ||
	(SELECT name FROM pg_ls_waldir() WHERE name ~ '\.history$' ORDER BY name DESC LIMIT 1)), E'\n') AS l
WHERE split_part(l, E'\t', 1) = :'tl';
SQL
}

# ha_promoted_switchpoint N TL: ha_switchpoint once the promotion has written
# its history file. Patroni may name N the leader a moment before that (the
# crash fault once read an empty switchpoint there), so the observation is
# retried for at most 30 s; the check on its value is not.
ha_promoted_switchpoint()
{
	local value deadline=$((SECONDS + 30))
	while [ $SECONDS -lt $deadline ]; do
		value=$(ha_switchpoint "$1" "$2" || true)
		[ -n "$value" ] && { echo "$value"; return 0; }
		sleep 0.2
	done
	return 1
}

# ha_switchover: planned, through the leader's REST API; any candidate.
ha_switchover()
{
	local p=$1
	curl -sf -m 30 -XPOST "http://127.0.0.1:${HA_API_PORT[$p]}/switchover" \
		-H 'Content-Type: application/json' -d "{\"leader\": \"$p\"}" >&2
	echo >&2
}

# ha_timeline N: the timeline the node's Patroni reports.
ha_timeline() { ha_cluster_json | jq -r ".members[] | select(.name == \"$1\") | .timeline // \"?\""; }

ha_stop_all()
{
	local n pids
	set +e # runs from traps: every step, whatever failed before
	for n in "${HA_NODES[@]}"; do
		pids=$(ha_node_pids "$n" 2>/dev/null)
		# shellcheck disable=SC2086
		[ -n "$pids" ] && kill -CONT $pids 2>/dev/null
		[ -n "${HA_PID[$n]:-}" ] && kill -KILL "${HA_PID[$n]}" 2>/dev/null
		pids=$(ha_node_pids "$n" 2>/dev/null)
		# shellcheck disable=SC2086
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
	done
	[ -n "$HA_ETCD_PID" ] && kill -KILL "$HA_ETCD_PID" 2>/dev/null
	wait 2>/dev/null
	true
}

# ha_primary_is_not N: a primary is up and it is not N.
ha_primary_is_not()
{
	local n
	n=$(ha_primary) && [ "$n" != "$1" ]
}
