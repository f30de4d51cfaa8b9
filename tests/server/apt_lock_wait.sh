#!/usr/bin/env bash
# scripts/apt-install.sh (the installer of deps.sh and every script that
# installs packages) waits for another apt process's lock with a bound and
# a message, instead of failing at once (issue 49): a lock held as
# unattended upgrades hold it, by an fcntl() lock on dpkg's frontend lock.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/server/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "apt_lock_wait: needs root (it takes dpkg's lock)"; exit 1; }
work=$(mktemp -d)
holder=
# The holder only while it is still this script's child (suites run side
# by side and pids wrap: an exited holder's pid may be another's by now).
trap '[ -n "$holder" ] && [ "$(awk '"'"'/^PPid:/ {print $2}'"'"' "/proc/$holder/status" 2>/dev/null)" = $$ ] &&
	kill "$holder" 2>/dev/null; rm -rf "$work"' EXIT
missing=pglease-no-such-package # never installed: the installer has work to do

# hold_lock SECONDS: dpkg's frontend lock, held as apt holds it.
hold_lock()
{
	python3 - "$1" "$work/held" <<'PY' &
import fcntl, os, sys, time
fd = os.open("/var/lib/dpkg/lock-frontend", os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(float(sys.argv[1]))
PY
	holder=$!
	for _ in $(seq 1 100); do [ -f "$work/held" ] && return 0; sleep 0.05; done
	return 1
}

check "nothing to install: returns at once without looking at the locks" \
	"$root/scripts/apt-install.sh" bash

hold_lock 4
start=$SECONDS
out=$(PGLEASE_APT_DRY_RUN=1 "$root/scripts/apt-install.sh" "$missing" 2>&1) && rc=0 || rc=$?
took=$((SECONDS - start))
echo "$out"
check "it waited for the held lock and went on (exit $rc after ${took} s)" \
	test "$rc" -eq 0 -a "$took" -ge 3
check "it said once that it waits, and for how long at most" \
	test "$(grep -c 'holds its locks; waiting up to 600 s' <<<"$out")" -eq 1
check "it went on once the lock was free" grep -q "would install $missing" <<<"$out"
wait "$holder" 2>/dev/null || true
holder=
rm -f "$work/held"

hold_lock 30
start=$SECONDS
out=$(PGLEASE_APT_DRY_RUN=1 PGLEASE_APT_LOCK_TIMEOUT=3 "$root/scripts/apt-install.sh" "$missing" 2>&1) && rc=0 || rc=$?
took=$((SECONDS - start))
echo "$out"
check "a lock held past the bound: it gives up by the bound (exit $rc after ${took} s)" \
	test "$rc" -ne 0 -a "$took" -ge 3 -a "$took" -le 15
check "and says why" grep -q "still held after 3 s; giving up" <<<"$out"
finish
