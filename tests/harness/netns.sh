# Hosts for network faults (source it; root only).  A host is a network
# namespace joined to this one by a veth pair, with addresses on that link
# only (10.231.X.Y/30, a free one), so its traffic goes nowhere else.  A cut
# is nftables `drop` in the host's namespace: its sockets stay open and
# silent, as behind a dead switch port.  net_destroy_all removes everything.
#
#   net_host NAME          make host NAME (prints nothing)
#   net_server_addr NAME   this side's address on NAME's link (listen there)
#   net_exec NAME CMD...   run CMD inside host NAME
#   net_cut NAME [both|in|out]   drop NAME's packets (in: to it, out: from it)
#   net_heal NAME          remove the cut
#   net_destroy_all        remove every host made here
NET_HOSTS=()
declare -A NET_NS NET_ADDR NET_PEER NET_VETH

# Every suite that makes hosts takes this lock while it picks a free subnet
# and claims it (tests/fault/netns.cpp too): two runs at once never pick the
# same one.
NET_HOSTS_LOCK=/tmp/pglease-net-hosts.lock

net_host()
{
	local lock
	exec {lock}>>"$NET_HOSTS_LOCK"
	flock -w 60 "$lock" || { echo "net_host: $NET_HOSTS_LOCK held for 60 s" >&2; exec {lock}>&-; return 1; }
	local status=0
	net_host_locked "$1" || status=$?
	exec {lock}>&-
	return $status
}

net_host_locked()
{
	local name=$1 i ns veth
	for i in $(seq 1 250); do
		# a /30 per host: .1 here, .2 there; skip subnets in use (other runs)
		ip -o -4 addr show | grep -q " 10\.231\.$i\.1/" && continue
		ns=pgl$$-$i
		veth=pgl$((i))h$(($$ % 100000))
		ip netns add "$ns" 2>/dev/null || continue
		if ! ip link add "$veth" type veth peer name eth0 netns "$ns" 2>/dev/null; then
			ip netns del "$ns"
			continue
		fi
		ip addr add "10.231.$i.1/30" dev "$veth"
		ip link set "$veth" up
		ip -n "$ns" addr add "10.231.$i.2/30" dev eth0
		ip -n "$ns" link set eth0 up
		ip -n "$ns" link set lo up
		NET_NS[$name]=$ns
		NET_ADDR[$name]=10.231.$i.1
		NET_PEER[$name]=10.231.$i.2
		NET_VETH[$name]=$veth
		NET_HOSTS+=("$name")
		return 0
	done
	echo "net_host: no free 10.231.X.0/30" >&2
	return 1
}

net_server_addr() { echo "${NET_ADDR[$1]}"; }
net_exec() { local n=$1; shift; ip netns exec "${NET_NS[$n]}" "$@"; }

net_cut()
{
	local name=$1 way=${2:-both} rules=""
	case "$way" in
		both|in) rules="$rules chain in { type filter hook input priority 0; iifname \"eth0\" drop; };" ;;&
		both|out) rules="$rules chain out { type filter hook output priority 0; oifname \"eth0\" drop; };" ;;
		in) ;;
		*) echo "net_cut: both, in or out" >&2; return 1 ;;
	esac
	ip netns exec "${NET_NS[$name]}" nft "add table inet cut { $rules }"
}

net_heal() { ip netns exec "${NET_NS[$1]}" nft delete table inet cut 2>/dev/null || true; }

net_destroy_all()
{
	local name
	for name in "${NET_HOSTS[@]}"; do
		ip netns pids "${NET_NS[$name]}" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
		ip link del "${NET_VETH[$name]}" 2>/dev/null || true
		ip netns del "${NET_NS[$name]}" 2>/dev/null || true
	done
	NET_HOSTS=()
}
