#!/usr/bin/env bash
# The gap of a rolling `pglease run --take-over`: N successive instances on
# one lease, each taking over from the one before. Gap = the old job's last
# moment (its SIGTERM trap) to the new job's first; both stamped with bash's
# $EPOCHREALTIME (no fork). Prints each gap, then p50, p99 and max.
#
#   PGLEASE=build/client/cli/pglease bench/terms/takeover_gap.sh [N]
# Uses the server of the PG* variables when PGPORT is set, else starts one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${PGLEASE:?PGLEASE must name the pglease binary}"
n=${1:-20}
if [ -z "${PGPORT:-}" ]; then
	source "$here/../../tests/harness/pg_cluster.sh"
	pg_cluster_start gap >/dev/null
	psql -X -q -c "CREATE EXTENSION pg_lease"
fi
work=$(mktemp -d /tmp/pglease_gap.XXXXXX)
log=$work/jobs.log
pids=()
cleanup() { kill -KILL "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap 'cleanup; declare -F pg_cluster_stop_all >/dev/null && pg_cluster_stop_all || true' EXIT
lease=gap_$$

# Job i: "start i t" at once; "end i t" from its SIGTERM trap. `wait` returns
# at once on the signal; the sleep in its group gets the SIGTERM too.
job='trap "echo end $I \$EPOCHREALTIME >>$LOG; exit 0" TERM
	echo start $I $EPOCHREALTIME >>$LOG
	sleep 1000 & wait'

for i in $(seq 0 "$n"); do
	flag=()
	[ "$i" -gt 0 ] && flag=(--take-over)
	I=$i LOG=$log "$PGLEASE" -q run --lease "$lease" --ttl 5s --identity "gap-$i" "${flag[@]}" -- \
		bash -c "$job" &
	pids+=($!)
	for _ in $(seq 1 200); do
		grep -q "^start $i " "$log" 2>/dev/null && break
		sleep 0.025
	done
	grep -q "^start $i " "$log" || { echo "instance $i did not start" >&2; exit 1; }
	if [ "$i" -gt 0 ]; then
		wait "${pids[$((i - 1))]}" || { echo "instance $((i - 1)) exited $?" >&2; exit 1; }
	fi
done
kill -TERM "${pids[$n]}"
wait "${pids[$n]}" || true

# gap_i = start_i - end_{i-1}, in microseconds; a negative one is an overlap.
awk '$1 == "end" { e[$2] = $3 } $1 == "start" { s[$2] = $3 }
	END { for (i = 1; i in s; i++) if ((i - 1) in e) printf "%d\n", (s[i] - e[i - 1]) * 1e6 }' "$log" |
	sort -n >"$work/gaps"
count=$(wc -l <"$work/gaps")
[ "$count" -eq "$n" ] || { echo "expected $n gaps, got $count" >&2; cat "$log" >&2; exit 1; }
[ "$(head -1 "$work/gaps")" -gt 0 ] || { echo "OVERLAP: a job started before the previous one ended" >&2; exit 1; }
pct() { sed -n "$(( ($1 * count + 99) / 100 ))p" "$work/gaps"; }
echo "takeovers: $count; gap (us): p50 $(pct 50), p99 $(pct 99), max $(tail -1 "$work/gaps"), min $(head -1 "$work/gaps")"
