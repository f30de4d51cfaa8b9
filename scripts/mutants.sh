#!/usr/bin/env bash
# Mutation testing: break the product on purpose, one deliberate bug at a
# time, and check that the suites notice.
#
#   scripts/mutants.sh                  # every mutant in scripts/mutants/
#   scripts/mutants.sh ID...            # only these
#   scripts/mutants.sh --list           # ids and descriptions
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
# A suite list is taken word by word, never expanded as file names (a
# gtest filter such as unit:slow_rounds.* is passed as written).
#
# SQL mutants are judged by databases made after the mutant was installed:
# pg_regress and isolation make theirs, server suites make their clusters,
# and after every install of a changed sql/ file the scratch cluster's own
# database drops and creates the extension again (the cli and integration
# suites use it).
#
# Everything happens in a scratch directory: a copy of the tree, a private
# PostgreSQL installation (copied server binaries, symlinked libraries and
# share files, the extension installed there with DESTDIR) and a cluster
# started from it.  The system's installed pg_lease is never written; the
# script checks its checksums at the end and fails if they changed.
# Prints "<id> caught by <suite>", "<id> flaky: ...", "<id> not judged"
# (every suite it names failed its baseline) or "<id> SURVIVED" per mutant,
# then "caught N/M"; a suite that fails on the unmutated tree before the
# mutants is skipped with a message, not the whole run. Exits 1 unless every
# mutant was caught and every baseline passed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MUTANTS_DIR=${MUTANTS_DIR:-$ROOT/scripts/mutants}
JOBS=2
# PG_SYS_BIN, PG_SYS_LIB, PG_SYS_SHARE and private_postgres_make
source "$ROOT/tests/harness/private_postgres.sh"

log() { echo "mutants: $*" >&2; }
die() { log "$*"; exit 1; }

# --- the mutant list ------------------------------------------------------

mutant_ids() { (cd "$MUTANTS_DIR" && find . -maxdepth 1 -name '*.patch' | sed 's|^\./||; s/\.patch$//' | sort); }
mutant_description() { sed -n '1s/^# //p' "$MUTANTS_DIR/$1.patch"; }
mutant_suites() { sed -n 's/^# suites: //p' "$MUTANTS_DIR/$1.patch"; }
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

# copy_source: the kept copy of the tree in $SRC is brought up to date
# file by file: a file whose content differs (changed in the tree, or left
# patched by an interrupted run) is rewritten with a new time, so make
# rebuilds it; the others keep theirs, and their objects stay valid.
copy_source()
{
	local stage=$SCRATCH/stage rel changed=0
	mkdir -p "$SRC" "$stage"
	(cd "$ROOT" && git ls-files -co --exclude-standard -z |
		tar -cf - --null --no-recursion -T -) | tar -xf - -C "$stage"
	while IFS= read -r -d '' rel; do
		if ! cmp -s "$stage/$rel" "$SRC/$rel"; then
			mkdir -p "$(dirname "$SRC/$rel")"
			cp "$stage/$rel" "$SRC/$rel"
			changed=$((changed + 1))
		fi
	done < <(cd "$stage" && find . -type f -print0)
	# sources gone from the tree go from the copy too (PGXS, the SQL
	# edition's build and the suites take these by wildcard: a stale
	# expected file left in the copy fails its suite on the good tree)
	for rel in "$SRC"/extension/*.[ch] "$SRC"/sql/*.sql "$SRC"/sql/sql_edition/*.sql \
		"$SRC"/regress/sql/*.sql "$SRC"/regress/expected/*.out "$SRC"/regress/specs/*.spec \
		"$SRC"/regress/sql_edition/expected/*.out; do
		[ -e "$rel" ] && [ ! -e "$stage/${rel#"$SRC"/}" ] && rm -f "$rel" "${rel%.c}.o" "${rel%.c}.bc"
	done
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
	case ${1%%:*} in
	unit) echo pglease_unit_tests ;;
	integration) echo pglease_integration_tests ;;
	cli-unit) echo pglease_cli_unit_tests ;;
	cli) echo pglease ;;
	fault) echo pglease_fault ;;
	net) echo pglease_net_tests ;;
	clusters) cluster_binary "$1" ;;
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

# rebuild FILE: rebuild (and for the extension reinstall) what FILE is part of.
rebuild()
{
	case $1 in
	extension/*)
		pg_cluster_stop mut
		build_extension
		pg_cluster_start mut >/dev/null
		;;
	sql/*)
		pg_cluster_stop mut
		build_extension
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

# The server must run the scratch copy of the extension, never the system's:
# a backend that used a lease function maps exactly one pg_lease.so.
check_scratch_loaded()
{
	local maps
	maps=$(psql -X -q -A -t -c "SELECT lease_revoke('mutants-probe')" \
		-c "SELECT pg_read_file('/proc/' || pg_backend_pid() || '/maps')" | grep 'pg_lease\.so' | awk '{print $6}' | sort -u)
	[ "$maps" = "$SCRATCH/root$PG_SYS_LIB/pg_lease.so" ] ||
		die "the scratch server loaded '$maps', not $SCRATCH/root$PG_SYS_LIB/pg_lease.so"
	log "the scratch server runs $maps"
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
	case $1 in
	regress:* | iso:*) echo 120 ;;
	server:* | upgrade) echo 240 ;;
	unit | unit:* | cli-unit | cli-unit:*) echo 120 ;;
	integration:*) echo 300 ;;
	cli:*) echo 120 ;;
	clusters:*) echo 300 ;;
	fault:*) echo 600 ;;
	net | net:*) echo 300 ;;
	esac
}

# run_suite SUITE: 0 if it passes; its output goes to $SCRATCH/last.log.
run_suite()
{
	local suite=$1 kind=${1%%:*} names=${1#*:} out=$SCRATCH/last.log
	local -a cmd filter=()
	[ "$names" = "$suite" ] && names=""
	[ -n "$names" ] && filter=("--gtest_filter=$names")
	case $kind in
	regress) cmd=(make -s -C "$SRC" -f Makefile.pgxs installcheck "REGRESS=${names//,/ }" ISOLATION=) ;;
	iso) cmd=(make -s -C "$SRC" -f Makefile.pgxs installcheck REGRESS= "ISOLATION=${names//,/ }") ;;
	server) cmd=(env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE PG_BIN="$PG_BIN" bash "$SRC/tests/server/$names.sh") ;;
	upgrade) cmd=(env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE PG_BIN="$PG_BIN" bash "$SRC/tests/server/upgrade.sh") ;;
	unit) cmd=("$BUILD/tests/client/pglease_unit_tests" "${filter[@]}") ;;
	integration) cmd=("$BUILD/tests/client/pglease_integration_tests" "${filter[@]}") ;;
	cli-unit) cmd=("$BUILD/tests/cli/pglease_cli_unit_tests" "${filter[@]}") ;;
	cli) cmd=(env PGLEASE="$BUILD/client/cli/pglease" bash "$SRC/tests/cli/test_$names.sh") ;;
	clusters)
		# NAME[:FILTER]; the script starts its own clusters from the
		# private install (never the scratch cluster's root)
		local script=${names%%:*} gfilter=()
		[ "$script" != "$names" ] && gfilter=("GTEST_FILTER=${names#*:}")
		cmd=(env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE -u PG_CLUSTER_ROOT PG_BIN="$PG_BIN"
			"${gfilter[@]}" bash "$SRC/tests/client/$script.sh"
			"$BUILD/tests/client/$(cluster_binary "$suite")")
		;;
	fault) cmd=(env PG_BIN="$PG_BIN" "$BUILD/tests/fault/pglease_fault" --profile short --only "$names") ;;
	net) cmd=(env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE -u PG_CLUSTER_ROOT PG_BIN="$PG_BIN"
		bash "$SRC/tests/net/bounds.sh" "$BUILD/tests/net/pglease_net_tests" "${filter[@]}") ;;
	*) die "unknown suite $suite" ;;
	esac
	rm -f "$SRC"/regress/regression.diffs "$SRC"/regress/output_iso/regression.diffs
	SUITE_STATUS=0
	PGISOLATIONTIMEOUT=$ISOLATION_STEP_TIMEOUT timeout --kill-after=10 "$(suite_timeout "$suite")" \
		"${cmd[@]}" >"$out" 2>&1 </dev/null || SUITE_STATUS=$?
	# keep what the suite found, for the log of a caught mutant
	cat "$SRC"/regress/regression.diffs "$SRC"/regress/output_iso/regression.diffs >>"$out" 2>/dev/null || true
	return $SUITE_STATUS
}

# The failing tests inside a suite, for the report ("regress:fence" etc.).
failed_detail()
{
	local suite=$1 tests
	case $suite in
	regress:* | iso:*)
		tests=$(sed -n 's/^[ +]*\(test \|permutation \)\{0,1\}\([a-z_]*\) *\.\.\. *FAILED.*/\2/p; s/^not ok [0-9]* *- *\([a-z_]*\).*/\1/p' \
			"$SCRATCH/last.log" | sort -u | paste -sd, -)
		echo "${suite%%:*}:${tests:-${suite#*:}}"
		;;
	unit | unit:* | integration:* | cli-unit | cli-unit:* | clusters:* | net | net:*)
		# whole names, parameterized ones too (Prefix/Suite.Test/3)
		tests=$(sed -n 's/^\[  FAILED  \] \([^ ,]*\)\( (\|, where\).*/\1/p' "$SCRATCH/last.log" | sort -u | paste -sd, -)
		local kind=${suite%%:*}
		[ "$kind" = clusters ] && kind=$(echo "$suite" | cut -d: -f1,2) # clusters:NAME
		echo "$kind${tests:+:$tests}"
		# no test failed by name: the binary died (or hung) in some test,
		# which may have nothing to do with the mutant; say so
		if [ -z "$tests" ]; then
			echo "(no test failed by name: the binary ended with status $SUITE_STATUS in $(sed -n 's/^\[ RUN      \] //p' "$SCRATCH/last.log" | tail -1))"
		fi
		;;
	fault:*)
		tests=$(sed -n 's/^\[\([a-z0-9-]*\)\] \([a-zA-Z0-9 ]*\):.*/\1 \2/p' "$SCRATCH/last.log" | sort -u | paste -sd, -)
		echo "$suite${tests:+ ($tests)}"
		;;
	*) echo "$suite" ;;
	esac
	if [ "$SUITE_STATUS" -eq 124 ] || [ "$SUITE_STATUS" -eq 137 ]; then
		echo "(timed out after $(suite_timeout "$suite") s)"
	fi
}

# --- one mutant -----------------------------------------------------------

# Never a question (--force, no terminal): a patch that does not apply fails.
apply_patch() { patch -s -p1 -F0 -d "$SRC" --no-backup-if-mismatch --force -i "$MUTANTS_DIR/$ID.patch" </dev/null; }

# unmutate FILE: the copy taken before the patch, back in place (a new
# time, so make rebuilds it), and built.
unmutate()
{
	cp "$SCRATCH/unmutated" "$SRC/$1"
	touch "$SRC/$1"
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
	mapfile -t MUTANT_TARGETS < <(all_suites "$ID" | while IFS= read -r suite; do suite_target "$suite"; done | sort -u)
	# The file is put back from a copy, not by reversing the patch: the
	# tree is unmutated after every mutant, whatever the patch did.
	[ -f "$SRC/$file" ] || die "$ID: $file is not in the tree"
	cp "$SRC/$file" "$SCRATCH/unmutated"
	apply_patch || { cp "$SCRATCH/unmutated" "$SRC/$file"; die "$ID: patch does not apply"; }
	! cmp -s "$SRC/$file" "$SCRATCH/unmutated" || die "$ID: the patch changes nothing"
	if ! rebuild "$file"; then
		unmutate "$file"
		die "$ID: the mutant does not build"
	fi
	local -a suites
	read -r -a suites <<<"$(mutant_suites "$ID")"
	for suite in "${suites[@]}"; do
		if [ -n "${BASELINE_FAILED[$suite]:-}" ]; then
			log "$ID: $suite skipped (it failed on the unmutated tree)"
			continue
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
	local status=$?
	pg_cluster_stop_all 2>/dev/null || true
	if [ -n "${MUTANTS_KEEP:-}" ]; then
		log "scratch kept in $SCRATCH"
	else
		rm -rf "$SCRATCH"
	fi
	if [ -n "${SYSTEM_SUMS:-}" ]; then
		check_system_unchanged || status=1
	fi
	exit $status
}

main()
{
	local ids id caught=0 total=0 begin=$SECONDS

	if [ "${1:-}" = --list ]; then
		list_mutants
		return 0
	fi
	if [ $# -gt 0 ]; then ids=("$@"); else mapfile -t ids < <(mutant_ids); fi
	for id in "${ids[@]}"; do
		[ -f "$MUTANTS_DIR/$id.patch" ] || die "no mutant $id"
		case $(mutant_file "$id") in
		sql/pg_lease--*--*.sql) ;;
		sql/*)
			if grep -qx -e upgrade -e server:upgrade <<<"$(mutant_suites "$id" | tr ' ' '\n')"; then
				die "$id: a mutant of an install script is judged by behaviour, not by the upgrade's object comparison"
			fi
			;;
		esac
	done
	mapfile -t CLIENT_TARGETS < <(all_suites "${ids[@]}" | while IFS= read -r s; do suite_target "$s"; done | sort -u)

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
	trap 'exit 130' INT TERM

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
