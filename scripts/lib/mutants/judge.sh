# Part of scripts/mutants.sh, which sources it: the mutants and their
# verdicts.  The list of patches and what each names, one mutant applied,
# judged by its suites and put back (try_mutant), and the baseline of
# every suite on the unmutated tree.  Functions only, and the table of the
# suites that failed their baseline.
# shellcheck shell=bash

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
	# shellcheck disable=SC2034 # read by rebuild (tree.sh)
	mapfile -t MUTANT_TARGETS < <(all_suites "$ID" | while IFS= read -r suite; do suite_target "$suite"; done | sort -u)
	# The file is put back from a copy, not by reversing the patch: the
	# tree is unmutated after every mutant, whatever the patch did.
	[ -f "$SRC/$file" ] || die "$ID: $file is not in the tree"
	cp "$SRC/$file" "$SCRATCH/unmutated"
	apply_patch || { cp "$SCRATCH/unmutated" "$SRC/$file"; die "$ID: patch does not apply"; }
	# shellcheck disable=SC2034 # read by cleanup (stop.sh)
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
