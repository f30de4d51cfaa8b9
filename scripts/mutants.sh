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
# line says "flaky" and the mutant counts as not caught).  The suite kinds,
# what each runs, its timeout and SUITE@N (PostgreSQL 13, 17, 18) are in
# docs/mutants.md, "Suites and their timeouts".  A suite list is taken word
# by word, never expanded as file names (unit:slow_rounds.* as written).
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

# The tool's parts, in this order (functions and their tables; nothing runs)
source "$ROOT/scripts/lib/mutants/tree.sh"   # scratch tree, builds, rebuilds
source "$ROOT/scripts/lib/mutants/majors.sh" # SUITE@N: other majors
source "$ROOT/scripts/lib/mutants/suites.sh" # suite kinds, run_suite
source "$ROOT/scripts/lib/mutants/judge.sh"  # the mutants, try_mutant, baseline
source "$ROOT/scripts/lib/mutants/stop.sh"   # stop_suite, cleanup

# --- main -----------------------------------------------------------------

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
# (and its parts were read whole when sourced)
main "$@"; exit
