# Part of scripts/mutants.sh, which sources it: stopping.  A Ctrl-C or
# SIGTERM ends the running suite at once (stop_suite, end_tagged, set as
# traps in main), and every exit cleans up (cleanup: the file left mutated
# put back, the clusters stopped, the scratch folder gone, the system's
# pg_lease files checked).  Functions only.
# shellcheck shell=bash

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

# --- every exit -----------------------------------------------------------

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
