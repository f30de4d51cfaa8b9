#!/usr/bin/env bash
# `pglease run` cut off from the store (issue 38): the leader runs on a host
# of its own (tests/harness/netns.sh) whose packets nftables drops, both
# ways, only those to it, or only those from it; its sockets stay open and
# its renewal hangs in the kernel, not in libpq.  A follower on this host
# takes over.  What must hold, for each kind of cut:
#  1. the leader's job is stopped before its grant expires on the server
#     (the last expires_at the server gave it, by the machine's one clock),
#     and pglease exits 76 although its release may not get through
#     (bounded: within ttl + 2 s of the cut);
#  2. the follower leads within ttl + retry + takeover_timeout + 1 s of
#     the cut, plus one renew interval where the leader's renewals still
#     reach the server (its replies dropped: the server extends the lease
#     once more, and the leader never learns it);
#  3. no row of the old epoch commits after the new grant, by the
#     server's commit timestamps, also once the link heals and whatever
#     the old host's kernel still had to send arrives.
# Figures (ms after the cut) are printed on the last line.
set -euo pipefail
: "${PGLEASE:?PGLEASE must name the pglease binary}"
[ "$(id -u)" -eq 0 ] || { echo "FAIL: network namespaces need root" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../harness/pg_cluster.sh"
source "$here/../harness/netns.sh"

TMP=$(mktemp -d /tmp/pglease_net_test.XXXXXX)
chmod 0777 "$TMP"
BG=()
cleanup()
{
	local p
	for p in "${BG[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	net_destroy_all
	pg_cluster_stop_all
	rm -rf "$TMP"
}
trap cleanup EXIT
source "$here/../harness/shell.sh"
WAIT_STEP=0.02
# fail: print the logs of the processes this test ran
on_fail() { for f in "$TMP"/*.err; do [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done; }

ttl_ms=2000
net_host old
addr=$(net_server_addr old)
pg_cluster_init store
dir=$(pg_cluster_dir store)
echo "host all all 10.231.0.0/16 trust" >>"$dir/data/pg_hba.conf"
pg_cluster_start store "-c listen_addresses=127.0.0.1,$addr -c track_commit_timestamp=on" >/dev/null
sql "CREATE EXTENSION pg_lease" >/dev/null

# The job: a fenced insert every 50 ms through psql (the epoch comes in
# PGOPTIONS), so one is likely in flight at the cut.
job='echo $$ > "$DIR/$WHO.pgid"
while :; do
	psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO $TABLE (writer) VALUES ('"'"'$WHO'"'"')" >/dev/null 2>&1
	sleep 0.05
done'

figures=""
for way in both in out; do
	lease=job_$way
	table=t_$way
	rm -f "$TMP"/*.pgid
	sql "CREATE TABLE $table (id bigserial PRIMARY KEY, writer text, epoch bigint)" >/dev/null
	"$PGLEASE" -q fence "$table" --lease "$lease"
	net_exec old env PGHOST="$addr" PGPORT="$PGPORT" PGUSER=postgres PGDATABASE=postgres \
		DIR="$TMP" WHO=old TABLE="$table" "$PGLEASE" run --lease "$lease" --ttl 2s --identity old \
		--kill-after 300ms -- sh -c "$job" 2>"$TMP/old.err" &
	old=$!
	BG+=("$old")
	wait_until 15 test -s "$TMP/old.pgid" || fail "$way: the leader's job did not start"
	old_epoch=$(sql "SELECT epoch FROM leases WHERE name = '$lease'")
	wait_until 15 bash -c "[ \$(psql -X -A -t -c \"SELECT count(*) FROM $table WHERE epoch = $old_epoch\") -ge 5 ]" ||
		fail "$way: the leader's fenced inserts did not land"
	DIR=$TMP WHO=new TABLE=$table "$PGLEASE" run --lease "$lease" --ttl 2s --identity new \
		-- sh -c "$job" 2>"$TMP/new.err" &
	new=$!
	BG+=("$new")
	sleep 0.5 # the follower is waiting

	# The old grant's expiry on the server: read before the cut, then until
	# the follower leads (a renewal may still get through after the cut).
	expiry=0
	sample_expiry()
	{
		local e
		e=$(sql "SELECT (extract(epoch FROM expires_at) * 1000)::bigint FROM leases WHERE name = '$lease' AND epoch = $old_epoch")
		if [ -n "$e" ] && [ "$e" -gt "$expiry" ]; then expiry=$e; fi
	}
	sample_expiry
	cut=$(now_ms)
	net_cut old "$way"
	pgid=$(cat "$TMP/old.pgid")
	while kill -0 -"$pgid" 2>/dev/null; do
		[ $(($(now_ms) - cut)) -lt 10000 ] || fail "$way: the cut-off leader's job still runs 10 s after the cut"
		sample_expiry
	done
	stopped_at=$(now_ms)
	job_stopped=$((stopped_at - cut))
	wait_until 10 bash -c "! kill -0 $old 2>/dev/null" || fail "$way: the cut-off pglease still runs 10 s after the cut"
	exited=$(($(now_ms) - cut))
	rc=0
	wait "$old" || rc=$?
	[ "$rc" -eq 76 ] || fail "$way: the cut-off pglease exited $rc, expected 76"
	until [ -s "$TMP/new.pgid" ] || [ $(($(now_ms) - cut)) -ge 10000 ]; do
		sample_expiry
		sleep 0.02
	done
	[ "$stopped_at" -lt "$expiry" ] ||
		fail "$way: its job was seen stopped $((stopped_at - expiry)) ms after its grant expired on the server"
	[ "$exited" -lt $((ttl_ms + 2000)) ] || fail "$way: pglease exited $exited ms after the cut (bound ttl + 2 s)"
	pass "$way: cut off, job stopped after $job_stopped ms ($((expiry - stopped_at)) ms before its grant expired on the server), pglease exited 76 after $exited ms (ttl $ttl_ms)"

	wait_until 10 test -s "$TMP/new.pgid" || fail "$way: the follower did not lead within 10 s of the cut"
	led=$(($(now_ms) - cut))
	# ttl + retry (ttl / 4, jittered) + takeover_timeout (1 s) + 1 s, and a
	# renew interval (ttl / 3) where the renewals still get through.
	bound=$((ttl_ms + 600 + 1000 + 1000))
	[ "$way" = in ] && bound=$((bound + ttl_ms / 3))
	[ "$led" -lt "$bound" ] || fail "$way: the follower led $led ms after the cut (bound $bound ms)"
	new_epoch=$(sql "SELECT epoch FROM leases WHERE name = '$lease'")
	[ "$new_epoch" -gt "$old_epoch" ] || fail "$way: epoch $new_epoch after $old_epoch"
	pass "$way: the follower led $led ms after the cut (epoch $new_epoch)"

	# Heal: what the old host's kernel still holds may arrive now.
	net_heal old
	sleep 2
	kill -TERM "$new"
	wait "$new" 2>/dev/null || true
	granted=$(sql "SELECT min(time) FROM lease_events WHERE name = '$lease' AND epoch = $new_epoch")
	stale=$(sql "SELECT count(*) FROM $table WHERE epoch = $old_epoch AND pg_xact_commit_timestamp(xmin) >= '$granted'")
	[ "$stale" = 0 ] || fail "$way: $stale rows of the old epoch committed after the new grant"
	newrows=$(sql "SELECT count(*) FROM $table WHERE epoch = $new_epoch")
	[ "$newrows" -gt 0 ] || fail "$way: the new leader wrote nothing"
	pass "$way: after the heal, 0 rows of epoch $old_epoch committed after the new grant; $newrows of the new one"
	figures="$figures $way: job stopped $job_stopped, exit 76 at $exited, follower led at $led;"
done
echo "figures (ms after the cut, ttl $ttl_ms ms):$figures"
