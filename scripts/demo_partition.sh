# The demo's --partition scene (scripts/demo.sh sources it; root only): a
# leader on a host of its own, a network namespace joined to this one by a
# veth link (tests/harness/netns.sh), is cut off by nftables `drop` rules.
# Its sockets stay open and silent, its renewal hangs in the kernel: it
# must still stop its job and exit 76 on its own clock, a follower must
# take over, and what its host still had to send must be refused after the
# heal.

# start_worker_on_host NAME: a worker whose pglease and job run on host
# `cut` and reach the server over the link (PGHOST: TCP, not the socket
# file, which no network cut would touch).
start_worker_on_host()
{
	DIR=$DIR PGHOST=$(net_server_addr cut) net_exec cut "$PGLEASE" run --lease "$LEASE" --ttl "$TTL" \
		--kill-after 500ms --identity "$1" --downstream "dbname=reports" -- sh -c "$JOB" \
		>>"$DIR/$1.out" 2>>"$DIR/$1.err" &
	PID[$1]=$!
}
is_holder() { [ "$(holder)" = "$1" ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }

say "A partition: the leader runs on a host of its own, and that host is cut off the network"
stop_all_workers
start_worker_on_host worker-net
wait_for 10 is_holder worker-net || fail "worker-net, on its own host, did not lead"
EN=$(epoch)
note "worker-net leads with epoch $EN from its own host, reaching the server over a veth link ($(net_server_addr cut))"
start_worker worker-a
sleep 0.6
net_cut cut both
cut_at=$(now)
note "nftables now drops every packet of that host: its renewals hang in the kernel, its sockets stay open"
wait_for 15 new_holder worker-net || fail "no follower took over from the cut-off leader"
EF=$(epoch)
[ "$EF" -gt "$EN" ] || fail "the new epoch $EF is not larger than $EN"
good "$(holder) took over with epoch $EF > $EN, $(ms_since "$cut_at") ms after the cut"
wait_for 10 gone "${PID[worker-net]}" || fail "the cut-off leader's pglease did not exit"
exited=$(ms_since "$cut_at")
rc=0
wait "${PID[worker-net]}" || rc=$?
unset 'PID[worker-net]'
[ "$rc" -eq 76 ] || fail "the cut-off leader's pglease exited $rc, not 76"
wait_for 5 bash -c "! kill -0 -$(cat "$DIR/worker-net.pgid") 2>/dev/null" || fail "the cut-off leader's job survived"
rm -f "$DIR/worker-net.pgid"
good "worker-net stopped its job on its own clock and exited 76, $exited ms after the cut (its release could not be sent)"
net_heal cut
sleep 1
late=$(value "SELECT count(*) FROM ledger WHERE epoch = $EN AND at > (SELECT min(time) FROM lease_events
	WHERE name = '$LEASE' AND epoch = $EF AND event IN ('acquired', 'takeover'))")
[ "$late" = 0 ] || fail "$late rows of epoch $EN were written after epoch $EF was granted"
good "the link is healed: whatever that host still had to send arrived, and no row of epoch $EN landed after $EF was granted"
