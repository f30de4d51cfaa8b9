#!/usr/bin/env bash
# A handover's path has one durable commit (issue 53). The client library
# releases with synchronous_commit off for that transaction (pglease
# release is that call): a crash may lose the release, and then the lease
# only waits for its ttl, never two holders; the next grant is a durable
# commit, and WAL is flushed in order, so a crash keeps the release and
# the grant, or neither. lease_release itself no longer raises
# synchronous_commit (regress: acquire); every grant still does.
#
#   PGLEASE=build/client/cli/pglease tests/server/release_handoff.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${PGLEASE:?PGLEASE must name the built pglease binary}"
source "$here/../harness/pg_cluster.sh"
source "$here/lib.sh"

# fsync on, and every commit that flushes waits 100 ms first (commit_delay
# with commit_siblings 0): a durable commit cannot hide.
PG_TEST_FSYNC=on pg_cluster_start handoff
q "CREATE EXTENSION pg_lease" >/dev/null
q "ALTER SYSTEM SET commit_delay = 100000" >/dev/null
q "ALTER SYSTEM SET commit_siblings = 0" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null

out=$PG_CLUSTER_ROOT/out
ms_of() { # ms_of CMD...: runs CMD (its stdout into $out), prints its wall time in ms
	local start
	start=$(date +%s%N)
	"$@" >"$out"
	echo $((($(date +%s%N) - start) / 1000000))
}

# The delay bites: a grant waits for its flush (the same command, so the
# process start and connect are the same in both).
acquire_ms=$(ms_of "$PGLEASE" acquire handoff --identity a --ttl 1h)
epoch=$(cat "$out")
check "a grant is a durable commit: ${acquire_ms} ms with a 100 ms commit_delay" \
	test "$acquire_ms" -ge 100

# The release waits for no flush: with a synchronous standby named that
# never connects, every commit that waits (synchronous_commit on, as the
# grants' are) waits until cancelled, which the one-shot command does at
# its 5 s call timeout; the release must return well before. (Timed against
# the 100 ms commit_delay instead, a loaded machine's process start and
# connect alone took longer five times out of five.)
q "ALTER SYSTEM SET synchronous_standby_names = 'nobody_answers'" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
start=$(date +%s%N) rc=0
"$PGLEASE" release handoff --identity a --epoch "$epoch" || rc=$?
t=$((($(date +%s%N) - start) / 1000000))
check "the client's release waits for no flush: exit $rc in $t ms with a standby that never answers" \
	test "$rc" = 0 -a "$t" -lt 4500
q "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
check "the release freed the lease" test -z "$(q "SELECT holder FROM leases WHERE name = 'handoff'")"

# A successor's grant after the release, then a crash: both survive (the
# grant's flush wrote the release's WAL before it).
e_a=$("$PGLEASE" acquire order --identity a --ttl 1h)
"$PGLEASE" release order --identity a --epoch "$e_a"
e_b=$("$PGLEASE" acquire order --identity b --ttl 1h)
pg_cluster_stop handoff immediate
pg_cluster_start handoff
check "after a crash the successor's grant ($e_b) holds, above the released one ($e_a)" \
	test "$(q "SELECT holder || ' ' || (epoch = $e_b) FROM leases WHERE name = 'order'")" = "b true"
check "and the release is in the history before it" \
	test "$(q "SELECT string_agg(event || ':' || holder, ',' ORDER BY time) FROM lease_events WHERE name = 'order'")" = \
	"acquired:a,released:a,acquired:b"

finish
