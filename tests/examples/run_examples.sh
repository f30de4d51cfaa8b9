#!/usr/bin/env bash
# Runs every language example under examples/ against a throwaway PostgreSQL 15
# cluster with pg_lease (the installed extension), each in its own database,
# and checks what it prints: the grant, a renewal, the fenced write, the
# takeover, the stale write refused with SQLSTATE LS001, the renewer stopping,
# and that the stale write left nothing behind. Installs its Debian packages
# if they are missing (as root). Ends with "N passed, M failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/../server/lib.sh"

# Debian packages the examples need. node-pg is not installed with dpkg when
# the machine's nodejs is not Debian's (node-pg's dependencies then cannot be
# met); its pure-JavaScript files are unpacked into a private directory instead.
packages=(postgresql-client-15 python3-psycopg python3-psycopg2 golang-go golang-github-jackc-pgx-v4-dev
	libpostgresql-jdbc-java default-jdk-headless nodejs)
"$(dirname "$0")/../../scripts/apt-install.sh" "${packages[@]}" >/dev/null ||
	echo "# apt-get install failed: the checks below say which examples could not run"
node_modules=""
if ! node -e "require('pg')" 2>/dev/null; then
	if dpkg-query -W -f='${Status}' node-pg 2>/dev/null | grep -q 'install ok installed' ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends node-pg >/dev/null 2>&1; then
		:
	else
		node_modules=$(mktemp -d /tmp/pg_lease_node.XXXXXX)
		(cd "$node_modules" && apt-get download node-pg node-split2 >/dev/null 2>&1 &&
			for deb in *.deb; do dpkg -x "$deb" root; done)
		node_modules=$node_modules/root/usr/share/nodejs
	fi
fi

pg_cluster_start examples || exit 1
work=$PG_CLUSTER_ROOT/work
mkdir -p "$work"
chmod 0777 "$work"

# run_example NAME COMMAND...: runs COMMAND against a fresh database NAME, output in $work/NAME.out.
run_example()
{
	local name=$1
	shift
	createdb "$name"
	PGDATABASE=$name timeout 120 "$@" >"$work/$name.out" 2>"$work/$name.err"
	local rc=$?
	sed "s/^/# $name: /" "$work/$name.out"
	[ $rc -eq 0 ] || sed "s/^/# $name stderr: /" "$work/$name.err" | tail -20
	return $rc
}

has() { grep -Eq "$2" "$work/$1.out"; }

# check_example NAME COMMAND...: the checks every example must pass.
check_example()
{
	local name=$1
	check "$name: runs and exits 0" run_example "$@"
	check "$name: worker-a acquired an epoch" has "$name" '^worker-a acquired epoch [0-9]+$'
	check "$name: worker-a renewed" has "$name" '^worker-a renewed until '
	check "$name: worker-a wrote through the fence" has "$name" '^worker-a wrote job 1 with epoch [0-9]+$'
	check "$name: worker-b took over with a larger epoch" epoch_grew "$name"
	check "$name: the stale write was refused with SQLSTATE LS001" has "$name" '^worker-a stale write refused: SQLSTATE LS001'
	check "$name: the renewer saw NULL and stopped" has "$name" '^worker-a lost the lease: renew returned NULL; stopping$'
	check "$name: the stale write left nothing behind" stale_absent "$name"
}

epoch_grew()
{
	local a b
	a=$(sed -n 's/^worker-a acquired epoch \([0-9]*\)$/\1/p' "$work/$1.out")
	b=$(sed -n 's/^worker-b acquired epoch \([0-9]*\)$/\1/p' "$work/$1.out")
	[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ]
}

stale_absent()
{
	local row
	row=$(PGDATABASE=$1 psql -X -A -t -c "SELECT state FROM jobs WHERE id = 1" 2>/dev/null)
	[ -n "$row" ] && [ "$row" != "stale write by worker-a" ]
}

ex=$root/examples
check_example sql psql -X -v ON_ERROR_STOP=1 -f "$ex/sql/fence.sql"
check_example psycopg3 /usr/bin/python3 "$ex/python/psycopg3_fence.py"
check_example psycopg2 /usr/bin/python3 "$ex/python/psycopg2_fence.py"
check_example node env ${node_modules:+NODE_PATH="$node_modules"} node "$ex/node/fence.js"

# Go: Debian's pgx in GOPATH mode, offline; the binary is built where the cluster's files live.
check "go: fence.go builds offline against Debian's pgx" \
	env GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= GOPROXY=off \
	go build -o "$work/fence-go" "$ex/go/fence.go"
check_example go "$work/fence-go"

# Java: javac, then run with the JDBC driver on the class path.
jdbc=/usr/share/java/postgresql.jar
check "java: Fence.java compiles" javac -d "$work/java" -cp "$jdbc" "$ex/java/Fence.java"
check_example java java -cp "$work/java:$jdbc" Fence

# Each file stays under 80 lines and starts with a 3-line comment.
for f in "$ex/sql/fence.sql" "$ex/python/psycopg3_fence.py" "$ex/python/psycopg2_fence.py" \
	"$ex/node/fence.js" "$ex/go/fence.go" "$ex/java/Fence.java"; do
	check "${f#"$root"/}: under 80 lines" test "$(wc -l <"$f")" -lt 80
done

[ -n "$node_modules" ] && rm -rf "${node_modules%/root/usr/share/nodejs}"
finish
