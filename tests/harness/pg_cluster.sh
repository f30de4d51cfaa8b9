# Throwaway PostgreSQL 15 clusters for tests, sourced by bash scripts.
#
#   source tests/harness/pg_cluster.sh
#   pg_cluster_start primary        # sets PGHOST PGPORT PGUSER PGDATABASE
#   ...
#   pg_cluster_stop_all             # also registered as an EXIT trap
#
# Each cluster lives under $PG_CLUSTER_ROOT/<name> on a free loopback port,
# with its socket in the same directory.  initdb and postgres refuse to run as
# root, so as root they run as the postgres user.  PG_BIN chooses the
# PostgreSQL install; PG_TEST_PRELOAD=1 puts pg_lease in
# shared_preload_libraries of every cluster (the notifier worker's path).

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_CLUSTER_ROOT=${PG_CLUSTER_ROOT:-$(mktemp -d /tmp/pg_lease_test.XXXXXX)}
chmod 0755 "$PG_CLUSTER_ROOT"
PG_CLUSTERS=()

pg_as_owner()
{
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

source "$(dirname "${BASH_SOURCE[0]}")/free_port.sh"

pg_cluster_dir() { echo "$PG_CLUSTER_ROOT/$1"; }

# pg_cluster_init NAME: initdb only (no start), port chosen and remembered.
pg_cluster_init()
{
	local name=$1 dir
	dir=$(pg_cluster_dir "$name")
	mkdir -p "$dir"
	[ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
	pg_as_owner "$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; return 1; }
	pg_free_port >"$dir/port"
	cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $(cat "$dir/port")
unix_socket_directories = '$dir'
fsync = ${PG_TEST_FSYNC:-off}
max_prepared_transactions = 10
wal_level = replica
max_wal_senders = 5
log_min_messages = warning
CONF
	if [ -n "${PG_TEST_PRELOAD:-}" ]; then
		echo "shared_preload_libraries = 'pg_lease'" >>"$dir/data/postgresql.conf"
	fi
}

# pg_cluster_start NAME [extra postgres options...]: init if needed, start,
# and point the PG* variables at it.
pg_cluster_start()
{
	local name=$1 dir
	shift
	dir=$(pg_cluster_dir "$name")
	[ -d "$dir/data" ] || pg_cluster_init "$name" || return 1
	# A port chosen free can be taken before the server binds it (other
	# harnesses on the machine): then choose another, at most 3 times.
	local try seen
	for try in 1 2 3; do
		seen=$(stat -c %s "$dir/server.log" 2>/dev/null || echo 0)
		pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
			${1:+-o "$*"} start >/dev/null && break
		if [ "$try" = 3 ] ||
			! tail -c +$((seen + 1)) "$dir/server.log" | grep -q "could not create any TCP/IP sockets"; then
			cat "$dir/server.log" >&2
			return 1
		fi
		pg_free_port >"$dir/port"
		echo "port = $(cat "$dir/port")" >>"$dir/data/postgresql.conf"
	done
	case " ${PG_CLUSTERS[*]} " in *" $name "*) ;; *) PG_CLUSTERS+=("$name") ;; esac
	pg_cluster_use "$name"
}

# pg_cluster_use NAME: export the PG* variables for NAME.
pg_cluster_use()
{
	local dir
	dir=$(pg_cluster_dir "$1")
	export PGHOST=127.0.0.1 PGPORT
	PGPORT=$(cat "$dir/port")
	export PGUSER=postgres PGDATABASE=${PGDATABASE:-postgres}
}

# pg_cluster_basebackup NAME FROM: a streaming standby of running cluster
# FROM, on its own port (not started).
pg_cluster_basebackup()
{
	local name=$1 from=$2 dir
	dir=$(pg_cluster_dir "$name")
	mkdir -p "$dir"
	[ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
	pg_as_owner "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$(cat "$(pg_cluster_dir "$from")/port")" \
		-U postgres -D "$dir/data" -R -X stream -c fast >"$dir/basebackup.log" 2>&1 ||
		{ cat "$dir/basebackup.log" >&2; return 1; }
	pg_free_port >"$dir/port"
	pg_as_owner tee -a "$dir/data/postgresql.conf" >/dev/null <<CONF
port = $(cat "$dir/port")
unix_socket_directories = '$dir'
CONF
}

# pg_cluster_promote NAME: promote standby NAME, point the PG* variables at
# it, and wait (at most 10 s) until it accepts writes.
pg_cluster_promote()
{
	local i
	pg_as_owner "$PG_BIN/pg_ctl" -D "$(pg_cluster_dir "$1")/data" -w promote >/dev/null
	pg_cluster_use "$1"
	for i in $(seq 100); do
		[ "$(psql -X -q -A -t -c "SELECT pg_is_in_recovery()")" = f ] && return 0
		sleep 0.1
	done
	echo "pg_cluster_promote: $1 still in recovery after 10 s" >&2
	return 1
}

# pg_public_schema_as_15 DB OWNER: before PostgreSQL 15 schema public
# belongs to the bootstrap superuser and every role may create in it; from
# 15 on it belongs to the database's owner and only the owner creates there.
# On an older server, DB (owned by OWNER, no superuser) is made as 15 makes
# it, so that suites written for 15's defaults (an owner who grants CREATE
# on public) run unchanged; on 15 and later, nothing.
pg_public_schema_as_15()
{
	[ "$(psql -X -A -t -d "$1" -c "SHOW server_version_num")" -lt 150000 ] || return 0
	psql -X -q -d "$1" -c "ALTER SCHEMA public OWNER TO $2" -c "REVOKE CREATE ON SCHEMA public FROM PUBLIC"
}

# pg_cluster_stop NAME [mode]: mode is fast (default) or immediate.
pg_cluster_stop()
{
	local dir
	dir=$(pg_cluster_dir "$1")
	[ -f "$dir/data/postmaster.pid" ] || return 0
	pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -m "${2:-fast}" -w -t 60 stop >/dev/null 2>&1 || true
}

pg_cluster_stop_all()
{
	local name
	for name in "${PG_CLUSTERS[@]}"; do
		pg_cluster_stop "$name" immediate
	done
	if [ -z "${PG_KEEP_CLUSTERS:-}" ]; then
		rm -rf "$PG_CLUSTER_ROOT"
	fi
}

trap pg_cluster_stop_all EXIT
