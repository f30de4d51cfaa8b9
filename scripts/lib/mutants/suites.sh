# Part of scripts/mutants.sh, which sources it: the suite kinds (listed in
# docs/mutants.md, "Suites and their timeouts").  The client target each
# needs, its timeout, the check of a suite's name, the run of a suite, and
# the failing tests it names for the report.  Functions only.
# shellcheck shell=bash

# --- suites ---------------------------------------------------------------

suite_target()
{
	local base
	base=$(suite_base "$1")
	case $base in
	server:release_handoff) echo pglease ;; # the command's release
	esac
	case ${base%%:*} in
	unit) echo pglease_unit_tests ;;
	integration | sql-integration) echo pglease_integration_tests ;;
	cli-unit) echo pglease_cli_unit_tests ;;
	cli | sql-cli | net-blackhole) echo pglease ;;
	fault | sql-fault) echo pglease_fault ;;
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
	fault:* | sql-fault:*) echo 600 ;;
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
	# shellcheck disable=SC2153 # SCRATCH is main's, not a misspelt scratch
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
	server) cmd=(env "${own[@]}" "${pgbin[@]}" PGLEASE="$BUILD/client/cli/pglease"
		bash "$SRC/tests/server/$names.sh") ;;
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
	sql-fault) cmd=(env "${pgbin[@]}" "$BUILD/tests/fault/pglease_fault" --profile short --edition sql --only "$names") ;;
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
	fault:* | sql-fault:*)
		tests=$(sed -n 's/^\[\([a-z0-9-]*\)\] \([a-zA-Z0-9 ]*\):.*/\1 \2/p' "$SCRATCH/last.log" | sort -u | paste -sd, -)
		echo "$suite${tests:+ ($tests)}"
		;;
	*) echo "$suite" ;;
	esac
}
