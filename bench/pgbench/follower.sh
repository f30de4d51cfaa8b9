# The follower of the benchmarks: a psql LISTENing on pg_lease, which prints
# the notifications that arrived after each of its queries (one every
# 0.2 s).  Sourced by notify_cost.sh, pgbench_ratios.sh and
# installed_ratios.sh; $work must name their scratch directory.
#
#   follower_start NAME            # returns once LISTEN has run
#   follower_count NAME            # notifications received so far
#   follower_stop NAME [EXPECTED]  # once EXPECTED arrived (at most 60 s); prints the count

follower_start()
{
	rm -f "$work/follower.stop"
	{
		echo "LISTEN pg_lease;"
		while [ ! -e "$work/follower.stop" ]; do
			echo "SELECT 1;"
			sleep 0.2
		done
	} | psql -X -q -A -t >"$work/follower.$1.out" 2>&1 &
	follower=$!
	# LISTEN has run once the follower's next query shows (at most 20 s)
	local deadline=$((SECONDS + 20))
	until [ "$(psql -X -A -t -c "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT 1;'")" -gt 0 ]; do
		[ "$SECONDS" -lt "$deadline" ] || { echo "follower: not listening after 20 s" >&2; return 1; }
		sleep 0.1
	done
}

follower_count() { grep -c '^Asynchronous notification "pg_lease" with payload "{' "$work/follower.$1.out" || true; }

follower_stop()
{
	local deadline=$((SECONDS + 60))
	while [ "$(follower_count "$1")" -lt "${2:-0}" ] && [ $SECONDS -lt $deadline ]; do
		sleep 0.5
	done
	sleep 0.5 # and no more
	touch "$work/follower.stop"
	[ -n "${follower:-}" ] && { wait "$follower" 2>/dev/null || true; }
	follower=
	follower_count "$1"
}
