#!/usr/bin/env bash
# Mutation testing: break the product on purpose, one deliberate bug at a
# time, and check that the suites notice.
#
#   scripts/mutants.sh                  # every mutant in scripts/mutants/
#   scripts/mutants.sh ID...            # only these
#   scripts/mutants.sh --fast [ID...]   # only the first suite each names
#   scripts/mutants.sh --list           # ids and descriptions
#   MUTANTS_FAST=1      as --fast
#   MUTANTS_JOBS=N      parallel jobs of the builds (2)
#   MUTANTS_KEEP=1      keep the scratch directory
#   MUTANTS_RESULTS=DIR where the catching suite's log goes (build/mutants)
#   MUTANTS_DIR=DIR     another list of patches (e.g. a probe of your own)
#   MUTANTS_WORK=DIR    the kept copy of the tree and its builds
#                       (build/mutants-work): a later run rebuilds only
#                       the files that changed since
#
# Each mutant is scripts/mutants/<id>.patch: a first line "# <what it
# breaks>", a line "# suites: <suite> ...", then a unified diff of one file,
# applied without fuzz (patch -F0: a mutant whose code drifted fails to
# apply, loudly, and is regenerated with the same meaning).
# Suites are tried in the order listed, fastest first; the first that fails
# catches the mutant, if it passes again on the unmutated tree (else the
# line says "flaky" and the mutant counts as not caught):
#   regress:NAME[,NAME]  pg_regress suites of regress/sql
#   iso:NAME[,NAME]      isolation specs of regress/specs
#   server:NAME          tests/server/NAME.sh (clusters of its own)
#   upgrade              tests/server/upgrade.sh: the upgrade paths and the
#                        object comparison with a fresh install (never for a
#                        mutant of an install script sql/pg_lease--V.sql:
#                        that comparison fails on any change, whatever it
#                        does; such mutants are judged by behaviour)
#   unit[:FILTER]        the client's GoogleTest unit binary (gtest filter)
#   integration:FILTER   the client's integration binary against the
#                        scratch cluster (gtest filter)
#   cli-unit[:FILTER]    the command's GoogleTest unit binary
#   cli:NAME             tests/cli/test_NAME.sh against the built pglease
#   clusters:NAME[:FILTER]  tests/client/NAME.sh (downstream, syncrep,
#                        server_control): the two-cluster and one-cluster
#                        client binaries on clusters of their own (gtest
#                        filter through GTEST_FILTER)
#   fault:PHASE[,PHASE]  pglease_fault --profile short --only PHASE,...
#                        (its own clusters, from the private install)
#   net[:FILTER]         tests/net/bounds.sh: the net tests binary on a host
#                        of its own, cut off by nftables (root; gtest filter)
#   net-blackhole        tests/net/test_run_blackhole.sh: a pglease run
#                        leader on a host of its own, cut off (root)
#   sql-integration:FILTER  tests/client/sql_edition.sh: the integration
#                        binary against the SQL edition installed by a
#                        database owner (no superuser), on a cluster of its
#                        own (gtest filter through GTEST_FILTER)
#   sql-cli[:NAME[,NAME]]  tests/cli/sql_edition.sh: the command's scripts
#                        test_NAME.sh (default: all that CTest runs there)
#                        against the SQL edition
# Any suite that runs a server takes a suffix @N (13, 17, 18): the same
# suite on PostgreSQL N, from a private copy of scripts/pg-major.sh's
# cached server with the scratch tree's extension built for N (e.g.
# regress:fence@13, server:takeover@18, sql-integration:pg_lease.*@17).
# A suite list is taken word by word, never expanded as file names (a
# gtest filter such as unit:slow_rounds.* is passed as written).
#
# SQL mutants are judged by databases made after the mutant was installed:
# pg_regress and isolation make theirs, server suites make their clusters,
# and after every install of a changed sql/ file the scratch cluster's own
# database drops and creates the extension again (the cli and integration
# suites use it). The SQL edition's suites generate its script from the
# scratch tree (scripts/sql_edition.py, sql/sql_edition/) when they run.
#
# Everything happens in a scratch directory: a copy of the tree, a private
# PostgreSQL installation (copied server binaries, symlinked libraries and
# share files, the extension installed there with DESTDIR) and a cluster
# started from it.  The system's installed pg_lease is never written; the
# script checks its checksums at the end and fails if they changed.  Nor is
# the majors' cache: an @N suite runs a copy of it (without pg_lease).
# Prints "<id> caught by <suite>", "<id> flaky: ...", "<id> not judged"
# (every suite it names failed its baseline) or "<id> SURVIVED" per mutant,
# then "caught N/M"; a suite that fails on the unmutated tree before the
# mutants is skipped with a message, not the whole run. Exits 1 unless every
# mutant was caught and every baseline passed.  Ctrl-C or SIGTERM ends the
# running suite's processes at once, then cleans up as any exit does.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MUTANTS_DIR=${MUTANTS_DIR:-$ROOT/scripts/mutants}
JOBS=${MUTANTS_JOBS:-2}
# PG_SYS_BIN, PG_SYS_LIB, PG_SYS_SHARE and private_postgres_make
source "$ROOT/tests/harness/private_postgres.sh"
# copy_extension_sources, as scripts/pg-major.sh copies them
source "$ROOT/scripts/lib/extension_sources.sh"

log() { echo "mutants: $*" >&2; }
die() { log "$*"; exit 1; }

# --- the mutant list ------------------------------------------------------

mutant_ids() { (cd "$MUTANTS_DIR" && find . -maxdepth 1 -name '*.patch' | sed 's|^\./||; s/\.patch$//' | sort); }
mutant_description() { sed -n '1s/^# //p' "$MUTANTS_DIR/$1.patch"; }
# With MUTANTS_FAST (--fast), only the first suite a mutant names, the
# fastest of its list (the later ones only back it up).
mutant_suites()
{
	if [ -n "${MUTANTS_FAST:-}" ]; then
		sed -n 's/^# suites: *\([^ ]*\).*/\1/p' "$MUTANTS_DIR/$1.patch"
	else
		sed -n 's/^# suites: //p' "$MUTANTS_DIR/$1.patch"
	fi
}
mutant_file() { sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$MUTANTS_DIR/$1.patch"; }

list_mutants()
{
	local id
	for id in $(mutant_ids); do
		printf '%-28s %s\n' "$id" "$(mutant_description "$id")"
	done
}

# --- the system files that must not change --------------------------------

system_checksums()
{
	find "$PG_SYS_LIB" "$PG_SYS_SHARE/extension" -path '*pg_lease*' \( -type f -o -type l \) \
		-print0 | sort -z | xargs -0 -r sha256sum
}

check_system_unchanged()
{
	if ! diff <(echo "$SYSTEM_SUMS") <(system_checksums) >&2; then
		log "the system's installed pg_lease changed during the run"
		return 1
	fi
	log "system pg_lease files unchanged ($(echo "$SYSTEM_SUMS" | grep -c .) files checked)"
}

# --- scratch tree, private PostgreSQL, builds -----------------------------

# sync_tree STAGE DEST: every file of STAGE whose content differs from its
# copy in DEST (changed in the tree, or left patched by an interrupted run)
# is copied there with a new time, so make rebuilds it; the others keep
# theirs, and their objects stay valid.  Prints how many were copied.
sync_tree()
{
	local stage=$1 dest=$2 rel changed=0
	while IFS= read -r -d '' rel; do
		if ! cmp -s "$stage/$rel" "$dest/$rel"; then
			mkdir -p "$(dirname "$dest/$rel")"
			cp "$stage/$rel" "$dest/$rel"
			changed=$((changed + 1))
		fi
	done < <(cd "$stage" && find . -type f -print0)
	echo "$changed"
}

# drop_stale STAGE DEST: sources gone from the tree go from the copy too
# (PGXS, the SQL edition's build and the suites take these by wildcard: a
# stale expected file left in the copy fails its suite on the good tree).
# zz_minor_stub.c is not the tree's: a major's build adds it (major_stub).
drop_stale()
{
	local stage=$1 dest=$2 rel
	for rel in "$dest"/extension/*.[ch] "$dest"/sql/*.sql "$dest"/sql/sql_edition/*.sql \
		"$dest"/regress/sql/*.sql "$dest"/regress/expected/*.out "$dest"/regress/specs/*.spec \
		"$dest"/regress/sql_edition/expected/*.out; do
		[ "${rel##*/}" != zz_minor_stub.c ] || continue
		if [ -e "$rel" ] && [ ! -e "$stage/${rel#"$dest"/}" ]; then
			rm -f "$rel" "${rel%.c}.o" "${rel%.c}.bc"
		fi
	done
}

# copy_source: the kept copy of the tree in $SRC brought up to date.
copy_source()
{
	local stage=$SCRATCH/stage changed
	mkdir -p "$SRC" "$stage"
	(cd "$ROOT" && git ls-files -co --exclude-standard -z |
		tar -cf - --null --no-recursion -T -) | tar -xf - -C "$stage"
	changed=$(sync_tree "$stage" "$SRC")
	drop_stale "$stage" "$SRC"
	rm -rf "$stage"
	log "kept tree $SRC: $changed files new or changed since the last run"
}

build_extension()
{
	make -s -C "$SRC" -f Makefile.pgxs -j"$JOBS" >"$SCRATCH/ext-build.log" 2>&1 ||
		{ cat "$SCRATCH/ext-build.log" >&2; return 1; }
	make -s -C "$SRC" -f Makefile.pgxs install DESTDIR="$SCRATCH/root" >>"$SCRATCH/ext-build.log" 2>&1 ||
		{ cat "$SCRATCH/ext-build.log" >&2; return 1; }
	[ -z "$(cd "$SCRATCH/root" && find . -path '*pg_lease*' -type l)" ] ||
		die "a link into the system's pg_lease files is in the scratch install"
}

# The client targets the selected mutants' suites need (set in main).
CLIENT_TARGETS=()

suite_target()
{
	local base
	base=$(suite_base "$1")
	case ${base%%:*} in
	unit) echo pglease_unit_tests ;;
	integration | sql-integration) echo pglease_integration_tests ;;
	cli-unit) echo pglease_cli_unit_tests ;;
	cli | sql-cli | net-blackhole) echo pglease ;;
	fault) echo pglease_fault ;;
	net) echo pglease_net_tests ;;
	clusters) cluster_binary "$base" ;;
	esac
}

# cluster_binary clusters:NAME[:FILTER]: the test binary NAME.sh drives.
cluster_binary()
{
	local rest=${1#clusters:}
	case ${rest%%:*} in
	downstream) echo pglease_downstream_tests ;;
	syncrep) echo pglease_syncrep_tests ;;
	server_control) echo pglease_server_control_tests ;;
	*) die "unknown cluster suite $1 (downstream, syncrep, server_control)" ;;
	esac
}

# build_client [TARGET...]: the given client targets (default: every one
# the selected mutants need), incrementally.
build_client()
{
	local -a targets=("$@")
	[ ${#targets[@]} -gt 0 ] || targets=("${CLIENT_TARGETS[@]}")
	[ ${#targets[@]} -gt 0 ] || return 0
	# configured once per run: a kept build tree may predate targets that
	# the copied CMakeLists.txt files now define
	if [ ! -f "$BUILD/CMakeCache.txt" ] || [ -z "${CLIENT_CONFIGURED:-}" ]; then
		cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$SCRATCH/client-build.log" 2>&1 ||
			{ cat "$SCRATCH/client-build.log" >&2; return 1; }
		CLIENT_CONFIGURED=1
	fi
	cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" >>"$SCRATCH/client-build.log" 2>&1 ||
		{ tail -50 "$SCRATCH/client-build.log" >&2; return 1; }
}

# rebuild FILE: rebuild (and for the extension reinstall) what FILE is part
# of; fails if it does not build (the cluster runs again either way).  A
# rule for every kind of file a mutant patches.  The other majors' builds
# follow in prepare_majors, when a suite of theirs runs.
rebuild()
{
	case $1 in
	extension/*)
		pg_cluster_stop mut
		build_extension || { pg_cluster_start mut >/dev/null; return 1; }
		pg_cluster_start mut >/dev/null
		;;
	# The SQL edition: no module, nothing to compile.  Its suites generate
	# its script from the scratch tree when they run; make generates the
	# install's pg_lease_sql scripts (CREATE EXTENSION pg_lease_sql) again.
	sql/sql_edition/* | scripts/sql_edition.py) build_extension ;;
	sql/*)
		pg_cluster_stop mut
		build_extension || { pg_cluster_start mut >/dev/null; return 1; }
		pg_cluster_start mut >/dev/null
		# the database the cli and integration suites use: the objects
		# of the script just installed, not the ones it had
		# (the CASCADE's NOTICE per dropped object stays out of the log)
		PGOPTIONS="-c client_min_messages=warning" psql -X -q \
			-c "DROP EXTENSION IF EXISTS pg_lease CASCADE" -c "CREATE EXTENSION pg_lease" >/dev/null
		;;
	# only what this mutant's suites run: a target left behind is rebuilt,
	# from the reverted source, by the next mutant or run that needs it
	client/*) build_client "${MUTANT_TARGETS[@]}" ;;
	*) die "no rule to rebuild $1" ;;
	esac
}

# check_scratch_loaded [SO]: the server of the PG* variables runs the
# scratch copy of the extension (SO; default the private 15 install's),
# never the system's or the majors' cache's: a backend that used a lease
# function maps exactly one pg_lease.so.
check_scratch_loaded()
{
	local maps want=${1:-$SCRATCH/root$PG_SYS_LIB/pg_lease.so}
	maps=$(psql -X -q -A -t -c "SELECT lease_revoke('mutants-probe')" \
		-c "SELECT pg_read_file('/proc/' || pg_backend_pid() || '/maps')" | grep 'pg_lease\.so' | awk '{print $6}' | sort -u)
	[ "$maps" = "$want" ] || die "the scratch server loaded '$maps', not $want"
	log "the scratch server runs $maps"
}

# --- other PostgreSQL majors (SUITE@N) ------------------------------------

# suite_major SUITE: N of SUITE@N, else nothing; suite_base SUITE: the
# suite without its @N.
suite_major() { if [[ $1 =~ @([0-9]+)$ ]]; then echo "${BASH_REMATCH[1]}"; fi; }
suite_base() { echo "${1%@[0-9]*}"; }

# The SQL edition's suites install no module: on another major they need
# its server, not the extension built for it.
suite_needs_module()
{
	case $(suite_base "$1") in sql-integration* | sql-cli*) return 1 ;; esac
}

# The suites that run against the scratch cluster (the others start
# clusters of their own from PG_BIN).
suite_uses_scratch_cluster()
{
	case $(suite_base "$1") in regress:* | iso:* | integration:* | cli:*) return 0 ;; esac
	return 1
}

major_cache() { echo "${PGLEASE_MAJORS_CACHE:-/var/cache/pglease/majors/$1}"; }
major_bin() { echo "$SCRATCH/majors/$1/native/bin"; }

# major_copy N: a copy of scripts/pg-major.sh's tree of PostgreSQL N (its
# server, test drivers, Debian headers and pg_config shim) without any
# pg_lease file, the paths in its scripts pointed at the copy.  The cache
# is only read: the test command builds and installs pg_lease there (one
# suite of N at a time, CTest's lock major_N), so this run neither
# disturbs those suites nor runs what they installed.
major_copy()
{
	local n=$1 cache own=$SCRATCH/majors/$1 f
	[ -d "$own" ] && return 0
	cache=$(major_cache "$n")
	if [ ! -x "$cache/native/bin/postgres" ] || [ ! -x "$cache/pg_config" ] ||
		[ ! -d "$cache/deb/usr/include/postgresql/$n/server" ]; then
		die "no PostgreSQL $n in $cache: scripts/pg-major.sh $n (as root) fetches it once"
	fi
	cache=$(cd "$cache" && pwd)
	mkdir -p "$own"
	(cd "$cache" && tar -cf - --exclude='*pg_lease*' native deb pg_config) | tar -xf - -C "$own"
	# the shim and the test drivers' wrappers name the cache's folders
	{ grep -rlIF "$cache/" "$own/pg_config" "$own/native" || true; } |
		while IFS= read -r f; do sed -i "s|$cache/|$own/|g" "$f"; done
	chmod -R a+rX "$own"
	log "PostgreSQL $n: $("$own/native/bin/postgres" --version), copied from $cache"
}

# What the objects of a kept build of N were compiled against: a new
# server or headers (another minor) make them worthless.
major_stamp()
{
	local cache
	cache=$(major_cache "$1")
	cat "$cache/npm-version" 2>/dev/null || true
	sha256sum <"$SCRATCH/majors/$1/deb/usr/include/postgresql/$1/server/pg_config.h"
}

# major_build N: the scratch tree's extension built for N in a build folder
# of its own, kept between runs in $WORK/majors/N (PGXS builds in place,
# and the scratch tree's objects are 15's): only the files that changed
# since are copied there and rebuilt.  Installed into the copy of N once
# per run and after every change; MAJOR_FRESH[N] says so until the scratch
# cluster of N is started again.
declare -A MAJOR_INSTALLED=() MAJOR_FRESH=()
major_build()
{
	local n=$1 own=$SCRATCH/majors/$1 build=$WORK/majors/$1 stage=$SCRATCH/majors/$1-stage
	local stamp changed blog=$SCRATCH/majors/$1-build.log
	local -a pgmake=(make -s -C "$build" -f Makefile.pgxs PG_CONFIG="$own/pg_config")
	stamp=$(major_stamp "$n")
	if [ "$(cat "$build/.stamp" 2>/dev/null)" != "$stamp" ]; then
		rm -rf "$build"
		mkdir -p "$build"
		echo "$stamp" >"$build/.stamp"
	fi
	rm -rf "$stage"
	mkdir -p "$stage"
	copy_extension_sources "$SRC" "$stage" regress/sql regress/expected regress/specs
	changed=$(sync_tree "$stage" "$build")
	drop_stale "$stage" "$build"
	rm -rf "$stage"
	[ "$changed" -eq 0 ] && [ -n "${MAJOR_INSTALLED[$n]:-}" ] && return 0
	# an earlier install's scripts go first: one the tree no longer has
	# (an old version's full script) must not stay installed
	{
		"${pgmake[@]}" -j"$JOBS" && major_stub "$n" &&
			rm -f "$("$own/pg_config" --sharedir)"/extension/pg_lease[-.]* &&
			"${pgmake[@]}" install
	} >"$blog" 2>&1 || { tail -50 "$blog" >&2; return 1; }
	[ -z "$(cd "$own" && find . -path '*pg_lease*' -type l)" ] ||
		die "a link into another tree's pg_lease files is in the copy of PostgreSQL $n"
	MAJOR_INSTALLED[$n]=1
	MAJOR_FRESH[$n]=1
	log "PostgreSQL $n: $changed files new or changed, pg_lease built and installed in its copy"
}

# major_stub N: as scripts/pg-major.sh does.  Debian's headers can be of a
# newer minor than npm's server (17.12 against 17.10), and heap_getattr
# there calls heap_datum_check, which the older server lacks; it only looks
# at tuples that an older server never writes, so an empty one stands in.
# Anything else missing fails the build.
major_stub()
{
	local n=$1 build=$WORK/majors/$1 missing
	missing=$(comm -23 \
		<(nm -D --undefined-only "$build/pg_lease.so" | awk '$1 == "U" {print $2}' | grep -v @ | sort) \
		<(nm -D --defined-only "$SCRATCH/majors/$n/native/bin/postgres" | awk '{print $3}' | sort))
	[ -n "$missing" ] || return 0
	if [ "$missing" != heap_datum_check ] || [ -e "$build/extension/zz_minor_stub.c" ]; then
		echo "pg_lease.so needs what the PostgreSQL $n server lacks: $missing"
		return 1
	fi
	cat >"$build/extension/zz_minor_stub.c" <<'STUB'
#include "postgres.h"
#include "access/htup_details.h"

void
heap_datum_check(HeapTupleHeader tup, TupleDesc tupleDesc)
{
}
STUB
	make -s -C "$build" -f Makefile.pgxs PG_CONFIG="$SCRATCH/majors/$n/pg_config" -j"$JOBS"
}

# major_cluster_start N: the scratch cluster of N ("mutN", with CREATE
# EXTENSION pg_lease) for the suites that use the scratch cluster; the
# tool's own PG* variables name the cluster of 15 again afterwards.
declare -A MAJOR_CLUSTER=()
major_cluster_start()
{
	local n=$1
	PG_BIN=$(major_bin "$n") pg_cluster_start "mut$n" >/dev/null || return 1
	PGOPTIONS="-c client_min_messages=warning" psql -X -q \
		-c "DROP EXTENSION IF EXISTS pg_lease CASCADE" -c "CREATE EXTENSION pg_lease" >/dev/null
	check_scratch_loaded "$SCRATCH/majors/$n/native/lib/postgresql/pg_lease.so"
	pg_cluster_use mut
	MAJOR_CLUSTER[$n]=1
	MAJOR_FRESH[$n]=""
}

major_cluster_stop()
{
	PG_BIN=$(major_bin "$1") pg_cluster_stop "mut$1"
	MAJOR_CLUSTER[$1]=""
}

# prepare_majors SUITE...: every major these suites name, ready for them:
# its copy; unless only the SQL edition's suites use it, the extension of
# the scratch tree as it is now, built and installed there; and the
# scratch cluster of N, started again after an install, if a suite uses
# it.  Cheap when nothing changed.  Fails if the tree does not build for N.
prepare_majors()
{
	local suite n
	local -A module=() cluster=()
	for suite; do
		n=$(suite_major "$suite")
		[ -n "$n" ] || continue
		major_copy "$n"
		if suite_needs_module "$suite"; then module[$n]=1; fi
		if suite_uses_scratch_cluster "$suite"; then cluster[$n]=1; fi
	done
	for n in "${!module[@]}"; do
		major_build "$n" || { log "the scratch tree does not build for PostgreSQL $n"; return 1; }
		if [ -n "${cluster[$n]:-}" ] && { [ -z "${MAJOR_CLUSTER[$n]:-}" ] || [ -n "${MAJOR_FRESH[$n]:-}" ]; }; then
			major_cluster_stop "$n"
			major_cluster_start "$n"
		fi
	done
}

# --- suites ---------------------------------------------------------------

# Short, still safe timeouts: a suite that hangs counts as failing (and is
# reported as timed out).  An isolation step that waits longer than
# ISOLATION_STEP_TIMEOUT seconds is cancelled by isolationtester, which
# then reports a diff instead of hanging; no step of the specs waits more
# than about 6 s on a correct build.
ISOLATION_STEP_TIMEOUT=20
suite_timeout()
{
	case $(suite_base "$1") in
	regress:* | iso:*) echo 120 ;;
	server:* | upgrade) echo 240 ;;
	unit | unit:* | cli-unit | cli-unit:*) echo 120 ;;
	integration:*) echo 300 ;;
	cli:*) echo 120 ;;
	clusters:*) echo 300 ;;
	fault:*) echo 600 ;;
	net | net:* | net-blackhole) echo 300 ;;
	sql-integration:* | sql-cli | sql-cli:*) echo 600 ;;
	esac
}

# check_suite SUITE: a suite this script can run, or the run stops before
# it starts.
check_suite()
{
	local base kind
	base=$(suite_base "$1")
	kind=${base%%:*}
	[ -n "$(suite_timeout "$1")" ] || die "unknown suite $1"
	case $kind in
	unit | cli-unit) [ -z "$(suite_major "$1")" ] || die "$1: a unit suite runs no server, so no @N" ;;
	clusters) cluster_binary "$base" >/dev/null ;;
	esac
}

# sql_cli_scripts [NAME,NAME]: the command's scripts that sql-cli runs:
# those named, else every one CTest's sql_edition.cli runs (cli_scripts in
# tests/cli/CMakeLists.txt).
sql_cli_scripts()
{
	if [ -n "$1" ]; then
		echo "${1//,/ }"
	else
		sed -n '/^set(cli_scripts/,/)/p' "$SRC/tests/cli/CMakeLists.txt" |
			tr -d '()' | tr -s ' \t\n' ' ' | sed 's/^set cli_scripts //; s/^setcli_scripts //; s/ $//'
	fi
}

# run_suite SUITE: 0 if it passes; its output goes to $SCRATCH/last.log.
# It runs in the background, in a process group of its own (timeout's),
# so that a stop can end it at once (stop_suite); every process it starts
# carries MUTANTS_SUITE_TAG in its environment.
run_suite()
{
	local suite=$1 base kind names n out=$SCRATCH/last.log tree=$SRC script
	local -a cmd filter=() gfilter=() scripts pgbin=(PG_BIN="$PG_BIN") scratch=()
	local -a pgmake=(make -s -C "$SRC" -f Makefile.pgxs)
	# suites that start clusters of their own, never in the scratch
	# cluster's root
	local -a own=(-u PGHOST -u PGPORT -u PGUSER -u PGDATABASE -u PG_CLUSTER_ROOT)
	base=$(suite_base "$suite")
	n=$(suite_major "$suite")
	kind=${base%%:*} names=${base#*:}
	[ "$names" = "$base" ] && names=""
	[ -n "$names" ] && filter=("--gtest_filter=$names") && gfilter=("GTEST_FILTER=$names")
	if [ -n "$n" ]; then
		prepare_majors "$suite" || die "$suite: the scratch tree does not build for PostgreSQL $n"
		pgbin=(PG_BIN="$(major_bin "$n")")
		tree=$WORK/majors/$n
		pgmake=(make -s -C "$tree" -f Makefile.pgxs PG_CONFIG="$SCRATCH/majors/$n/pg_config")
		if suite_uses_scratch_cluster "$suite"; then
			scratch=(PGHOST=127.0.0.1 PGPORT="$(cat "$(pg_cluster_dir "mut$n")/port")" PGUSER=postgres PGDATABASE=postgres)
		fi
	fi
	case $kind in
	regress) cmd=(env "${scratch[@]}" "${pgmake[@]}" installcheck "REGRESS=${names//,/ }" ISOLATION=) ;;
	iso) cmd=(env "${scratch[@]}" "${pgmake[@]}" installcheck REGRESS= "ISOLATION=${names//,/ }") ;;
	server) cmd=(env "${own[@]}" "${pgbin[@]}" bash "$SRC/tests/server/$names.sh") ;;
	upgrade) cmd=(env "${own[@]}" "${pgbin[@]}" bash "$SRC/tests/server/upgrade.sh") ;;
	unit) cmd=("$BUILD/tests/client/pglease_unit_tests" "${filter[@]}") ;;
	integration) cmd=(env "${scratch[@]}" "$BUILD/tests/client/pglease_integration_tests" "${filter[@]}") ;;
	cli-unit) cmd=("$BUILD/tests/cli/pglease_cli_unit_tests" "${filter[@]}") ;;
	cli) cmd=(env "${scratch[@]}" PGLEASE="$BUILD/client/cli/pglease" bash "$SRC/tests/cli/test_$names.sh") ;;
	clusters)
		# NAME[:FILTER]; the script starts its own clusters from PG_BIN
		script=${names%%:*}
		gfilter=()
		[ "$script" != "$names" ] && gfilter=("GTEST_FILTER=${names#*:}")
		cmd=(env "${own[@]}" "${pgbin[@]}" "${gfilter[@]}" bash "$SRC/tests/client/$script.sh"
			"$BUILD/tests/client/$(cluster_binary "$base")")
		;;
	fault) cmd=(env "${pgbin[@]}" "$BUILD/tests/fault/pglease_fault" --profile short --only "$names") ;;
	net) cmd=(env "${own[@]}" "${pgbin[@]}"
		bash "$SRC/tests/net/bounds.sh" "$BUILD/tests/net/pglease_net_tests" "${filter[@]}") ;;
	net-blackhole) cmd=(env "${own[@]}" "${pgbin[@]}" PGLEASE="$BUILD/client/cli/pglease"
		bash "$SRC/tests/net/test_run_blackhole.sh") ;;
	# The SQL edition's suites: a cluster of their own, the edition's
	# script generated from the scratch tree and installed by a database
	# owner who is no superuser.
	sql-integration) cmd=(env "${own[@]}" "${pgbin[@]}" "${gfilter[@]}"
		bash "$SRC/tests/client/sql_edition.sh" "$BUILD/tests/client/pglease_integration_tests") ;;
	sql-cli)
		read -r -a scripts <<<"$(sql_cli_scripts "$names")"
		cmd=(env "${own[@]}" "${pgbin[@]}" PGLEASE="$BUILD/client/cli/pglease"
			bash "$SRC/tests/cli/sql_edition.sh" "${scripts[@]}")
		;;
	*) die "unknown suite $suite" ;;
	esac
	rm -f "$tree"/regress/regression.diffs "$tree"/regress/output_iso/regression.diffs
	SUITE_STATUS=0
	MUTANTS_SUITE_TAG=$SUITE_TAG PGISOLATIONTIMEOUT=$ISOLATION_STEP_TIMEOUT \
		timeout --kill-after=10 "$(suite_timeout "$suite")" "${cmd[@]}" >"$out" 2>&1 </dev/null &
	SUITE_PID=$!
	wait "$SUITE_PID" || SUITE_STATUS=$?
	SUITE_PID=""
	# keep what the suite found, for the log of a caught mutant
	cat "$tree"/regress/regression.diffs "$tree"/regress/output_iso/regression.diffs >>"$out" 2>/dev/null || true
	return $SUITE_STATUS
}

# Ctrl-C or SIGTERM: the running suite ends now, not at its timeout (up to
# 600 s).  timeout(1) runs it in a process group of its own, which the
# terminal's SIGINT never reaches: the group gets SIGTERM (a script under
# set -e then fails and its EXIT trap stops its clusters), SIGKILL if it
# is still there after 5 s (a script without -e goes on to its next
# command); then whatever still carries the run's tag (end_tagged).
stop_suite()
{
	local pid=${SUITE_PID:-} i
	[ -n "$pid" ] || return 0
	log "stopping: ending the running suite (process group $pid)"
	kill -TERM -- "-$pid" 2>/dev/null || true
	for i in $(seq 50); do
		kill -0 -- "-$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL -- "-$pid" 2>/dev/null || true
	end_tagged
}

# end_tagged: processes of this run's suites that outlived their group
# (pg_ctl starts a server in a session of its own), found by the tag in
# their environment, not by pid or name: a server gets SIGQUIT (immediate
# shutdown: its backends follow), anything else SIGKILL.  The folders of
# those servers' clusters (tests/harness/pg_cluster.sh's
# /tmp/pg_lease_test.*, whose EXIT trap did not run) go once they are
# gone.
end_tagged()
{
	local f pid ppid dir i alive
	local -a servers=() roots=()
	for f in /proc/[0-9]*/environ; do
		{ tr '\0' '\n' <"$f" | grep -qx "MUTANTS_SUITE_TAG=$SUITE_TAG"; } 2>/dev/null || continue
		pid=${f#/proc/}
		pid=${pid%/environ}
		ppid=$(ps -o ppid= -p "$pid" | tr -d ' ')
		if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != postgres ]; then
			kill -KILL "$pid" 2>/dev/null || true
		elif [ "$(cat "/proc/$ppid/comm" 2>/dev/null)" != postgres ]; then
			dir=$(readlink "/proc/$pid/cwd" || true) # a server runs in its data folder
			log "stopping: a server of the suite left running (pid $pid, $dir): SIGQUIT"
			kill -QUIT "$pid" 2>/dev/null || true
			servers+=("$pid")
			case $dir in /tmp/pg_lease_test.*/*/data) roots+=("${dir%/*/data}") ;; esac
		fi
	done
	for i in $(seq 50); do
		alive=0
		for pid in "${servers[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		[ "$alive" -eq 1 ] || break
		sleep 0.1
	done
	for dir in "${roots[@]}"; do rm -rf "$dir"; done
}

# The failing tests inside a suite, for the report ("regress:fence" etc.;
# "regress:fence@13" on another major).
failed_detail()
{
	local n
	n=$(suite_major "$1")
	if [ -n "$n" ]; then
		failed_detail_of "$(suite_base "$1")" | sed "1s/^\([^ ]*\)/\1@$n/"
	else
		failed_detail_of "$1"
	fi
	if [ "$SUITE_STATUS" -eq 124 ] || [ "$SUITE_STATUS" -eq 137 ]; then
		echo "(timed out after $(suite_timeout "$1") s)"
	fi
}

failed_detail_of()
{
	local suite=$1 tests kind
	case $suite in
	regress:* | iso:*)
		tests=$(sed -n 's/^[ +]*\(test \|permutation \)\{0,1\}\([a-z_]*\) *\.\.\. *FAILED.*/\2/p; s/^not ok [0-9]* *- *\([a-z_]*\).*/\1/p' \
			"$SCRATCH/last.log" | sort -u | paste -sd, -)
		echo "${suite%%:*}:${tests:-${suite#*:}}"
		;;
	unit | unit:* | integration:* | cli-unit | cli-unit:* | clusters:* | net | net:* | sql-integration:*)
		# whole names, parameterized ones too (Prefix/Suite.Test/3)
		tests=$(sed -n 's/^\[  FAILED  \] \([^ ,]*\)\( (\|, where\).*/\1/p' "$SCRATCH/last.log" | sort -u | paste -sd, -)
		kind=${suite%%:*}
		[ "$kind" = clusters ] && kind=$(echo "$suite" | cut -d: -f1,2) # clusters:NAME
		echo "$kind${tests:+:$tests}"
		# no test failed by name: the binary died (or hung) in some test,
		# which may have nothing to do with the mutant; say so
		if [ -z "$tests" ]; then
			echo "(no test failed by name: the binary ended with status $SUITE_STATUS in $(sed -n 's/^\[ RUN      \] //p' "$SCRATCH/last.log" | tail -1))"
		fi
		;;
	sql-cli | sql-cli:*)
		tests=$(sed -n 's/^not ok - \(.*\)$/\1/p' "$SCRATCH/last.log" | paste -sd, -)
		echo "sql-cli${tests:+:$tests}"
		;;
	net-blackhole)
		echo "net-blackhole ($(grep -m1 '^FAIL: ' "$SCRATCH/last.log" || echo "status $SUITE_STATUS"))"
		;;
	fault:*)
		tests=$(sed -n 's/^\[\([a-z0-9-]*\)\] \([a-zA-Z0-9 ]*\):.*/\1 \2/p' "$SCRATCH/last.log" | sort -u | paste -sd, -)
		echo "$suite${tests:+ ($tests)}"
		;;
	*) echo "$suite" ;;
	esac
}

# --- one mutant -----------------------------------------------------------

# Never a question (--force, no terminal): a patch that does not apply fails.
apply_patch() { patch -s -p1 -F0 -d "$SRC" --no-backup-if-mismatch --force -i "$MUTANTS_DIR/$ID.patch" </dev/null; }

# unmutate FILE: the copy taken before the patch, back in place (a new
# time, so make rebuilds it), and built (another major's build follows
# when a suite of it runs next: prepare_majors).
unmutate()
{
	cp "$SCRATCH/unmutated" "$SRC/$1"
	touch "$SRC/$1"
	MUTATED_FILE=""
	rebuild "$1"
}

# try_mutant ID: prints its line; returns 1 unless it was caught (a
# survivor, a catch by a suite that fails on the unmutated tree too, or no
# suite left to judge it after the baseline).
try_mutant()
{
	local file suite caught="" catcher="" ran=0 start=$SECONDS
	ID=$1
	file=$(mutant_file "$ID")
	local -a suites
	read -r -a suites <<<"$(mutant_suites "$ID")"
	mapfile -t MUTANT_TARGETS < <(all_suites "$ID" | while IFS= read -r suite; do suite_target "$suite"; done | sort -u)
	# The file is put back from a copy, not by reversing the patch: the
	# tree is unmutated after every mutant, whatever the patch did.
	[ -f "$SRC/$file" ] || die "$ID: $file is not in the tree"
	cp "$SRC/$file" "$SCRATCH/unmutated"
	apply_patch || { cp "$SCRATCH/unmutated" "$SRC/$file"; die "$ID: patch does not apply"; }
	MUTATED_FILE=$file	# put back by cleanup if the run stops now
	! cmp -s "$SRC/$file" "$SCRATCH/unmutated" || die "$ID: the patch changes nothing"
	if ! rebuild "$file"; then
		unmutate "$file"
		die "$ID: the mutant does not build"
	fi
	for suite in "${suites[@]}"; do
		if [ -n "${BASELINE_FAILED[$suite]:-}" ]; then
			log "$ID: $suite skipped (it failed on the unmutated tree)"
			continue
		fi
		# another major's build, only when a suite of it is reached
		if ! prepare_majors "$suite"; then
			unmutate "$file"
			die "$ID: the mutant does not build for PostgreSQL $(suite_major "$suite")"
		fi
		ran=$((ran + 1))
		if ! run_suite "$suite"; then
			caught=$(failed_detail "$suite" | paste -sd' ' -)
			catcher=$suite
			cp "$SCRATCH/last.log" "$RESULTS/$ID.log"
			break
		fi
	done
	unmutate "$file"
	if [ "$ran" -eq 0 ]; then
		echo "$ID not judged: every suite it names failed its baseline ($(mutant_suites "$ID"))"
		return 1
	fi
	if [ -n "$caught" ]; then
		# A catch counts only if the suite passes again without the mutant:
		# a flaky test can fail anywhere, mutated code or not.
		if ! run_suite "$catcher"; then
			cp "$SCRATCH/last.log" "$RESULTS/$ID.unmutated.log"
			echo "$ID flaky: $caught, but $catcher failed on the unmutated tree too" \
				"($(failed_detail "$catcher" | paste -sd' ' -); log $RESULTS/$ID.unmutated.log)" \
				"($((SECONDS - start)) s)"
			return 1
		fi
		echo "$ID caught by $caught ($((SECONDS - start)) s)"
		return 0
	fi
	echo "$ID SURVIVED ($(mutant_suites "$ID"))"
	return 1
}

# all_suites ID...: every suite the mutants name, once each, one a line.
all_suites()
{
	local id
	for id in "$@"; do mutant_suites "$id"; done | tr ' ' '\n' | sed '/^$/d' | sort -u
}

# Every suite a mutant names must pass on the unmutated tree, or a failure
# would prove nothing: one that fails is skipped for every mutant (listed in
# BASELINE_FAILED), and the others go on.  A failing suite's whole log is kept.
declare -A BASELINE_FAILED=()
baseline()
{
	local suite kept
	while IFS= read -r suite; do
		if ! run_suite "$suite"; then
			kept=$RESULTS/baseline-$(echo "$suite" | tr -c 'A-Za-z0-9_.,-' '_').log
			cp "$SCRATCH/last.log" "$kept"
			log "baseline: $suite fails on the unmutated tree, so it is skipped (whole log: $kept):"
			tail -40 "$SCRATCH/last.log" >&2
			BASELINE_FAILED[$suite]=1
		fi
	done < <(all_suites "$@")
}

# --- main -----------------------------------------------------------------

cleanup()
{
	local status=$? n
	# a mutant applied when the run stopped: the kept tree gets the file
	# back (with a new time: the next run rebuilds it)
	if [ -n "${MUTATED_FILE:-}" ]; then
		cp "$SCRATCH/unmutated" "$SRC/$MUTATED_FILE"
		log "$MUTATED_FILE put back unmutated in the kept tree"
	fi
	for n in "${!MAJOR_CLUSTER[@]}"; do major_cluster_stop "$n" 2>/dev/null || true; done
	pg_cluster_stop_all 2>/dev/null || true
	if [ -n "${MUTANTS_KEEP:-}" ]; then
		log "scratch kept in $SCRATCH"
	else
		rm -rf "$SCRATCH"
	fi
	if [ -n "${SYSTEM_SUMS:-}" ]; then
		check_system_unchanged || status=1
	fi
	exit "$status"
}

main()
{
	local ids id caught=0 total=0 begin=$SECONDS s
	local -a suites

	if [ "${1:-}" = --list ]; then
		list_mutants
		return 0
	fi
	if [ "${1:-}" = --fast ]; then
		MUTANTS_FAST=1
		shift
	fi
	if [ $# -gt 0 ]; then ids=("$@"); else mapfile -t ids < <(mutant_ids); fi
	for id in "${ids[@]}"; do
		[ -f "$MUTANTS_DIR/$id.patch" ] || die "no mutant $id"
		case $(mutant_file "$id") in
		sql/pg_lease--*--*.sql) ;;
		sql/pg_lease--*.sql)
			if grep -qx -e upgrade -e server:upgrade <<<"$(mutant_suites "$id" | tr ' ' '\n' | sed 's/@[0-9]*$//')"; then
				die "$id: a mutant of an install script is judged by behaviour, not by the upgrade's object comparison"
			fi
			;;
		esac
	done
	mapfile -t suites < <(all_suites "${ids[@]}")
	for s in "${suites[@]}"; do check_suite "$s"; done
	mapfile -t CLIENT_TARGETS < <(for s in "${suites[@]}"; do suite_target "$s"; done | sort -u)

	SYSTEM_SUMS=$(system_checksums)
	export PGLEASE_GIT_DIR=$ROOT	# for suites that build older versions from history
	SCRATCH=$(mktemp -d /tmp/pg_lease_mutants.XXXXXX)
	chmod 0755 "$SCRATCH"
	# The patches are read once, now: editing scripts/mutants/ while a run
	# goes on changes nothing of it.
	mkdir "$SCRATCH/patches"
	for id in "${ids[@]}"; do cp "$MUTANTS_DIR/$id.patch" "$SCRATCH/patches/"; done
	MUTANTS_DIR=$SCRATCH/patches
	WORK=${MUTANTS_WORK:-$ROOT/build/mutants-work}
	mkdir -p "$WORK"
	SRC=$WORK/src
	BUILD=$WORK/build
	RESULTS=${MUTANTS_RESULTS:-$ROOT/build/mutants}
	mkdir -p "$RESULTS"
	PG_CLUSTER_ROOT=$SCRATCH/clusters
	mkdir -p "$PG_CLUSTER_ROOT"
	private_postgres_make "$SCRATCH"
	source "$ROOT/tests/harness/pg_cluster.sh"
	trap cleanup EXIT
	trap 'stop_suite; exit 130' INT
	trap 'stop_suite; exit 143' TERM
	SUITE_TAG="$$.$(date +%s%N).$RANDOM"

	log "scratch $SCRATCH; building the extension and the client (-j$JOBS)"
	copy_source
	build_extension
	build_client
	pg_cluster_start mut >/dev/null
	psql -X -q -c "CREATE EXTENSION pg_lease"
	check_scratch_loaded
	log "scratch server PGPORT=$PGPORT, built in $((SECONDS - begin)) s; baseline suites"
	baseline "${ids[@]}"
	if [ ${#BASELINE_FAILED[@]} -gt 0 ]; then
		log "baseline done after $((SECONDS - begin)) s; failed, so skipped: ${!BASELINE_FAILED[*]}"
	else
		log "baseline passed after $((SECONDS - begin)) s"
	fi

	for id in "${ids[@]}"; do
		total=$((total + 1))
		if try_mutant "$id"; then caught=$((caught + 1)); fi
	done
	echo "caught $caught/$total in $((SECONDS - begin)) s"
	if [ ${#BASELINE_FAILED[@]} -gt 0 ]; then
		echo "skipped, failing on the unmutated tree: ${!BASELINE_FAILED[*]}"
	fi
	[ "$caught" -eq "$total" ] && [ ${#BASELINE_FAILED[@]} -eq 0 ]
}

# one line, parsed before it runs: editing this file meanwhile is harmless
main "$@"; exit
