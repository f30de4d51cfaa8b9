#!/usr/bin/env bash
# Installs the named Debian packages that are missing, the one installer
# of every script here (scripts/deps.sh, scripts/libpqxx.sh). On a fresh
# cloud machine another apt process (unattended upgrades) holds apt's and
# dpkg's locks for minutes after boot: this waits for them, at most
# PGLEASE_APT_LOCK_TIMEOUT seconds (default 600), saying so once, instead of
# failing at once. apt's output goes to a log; one line of progress is
# printed instead.
#
#   scripts/apt-install.sh PACKAGE...
#   PGLEASE_APT_DRY_RUN=1 scripts/apt-install.sh PACKAGE...   # wait, then only say what it would install
set -euo pipefail

missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
timeout=${PGLEASE_APT_LOCK_TIMEOUT:-600}
log=${TMPDIR:-/tmp}/pglease-deps.log

# apt takes fcntl() locks on these files; a lock that can be taken (and is
# let go at once) is free.
locks=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock)
locks_free()
{
	"${sudo[@]}" python3 - "${locks[@]}" <<'PY'
import fcntl, os, sys
for path in sys.argv[1:]:
    if not os.path.exists(path):
        continue
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit(1)
    finally:
        os.close(fd)
PY
}
start=$SECONDS
if ! locks_free; then
	echo "apt-install: another apt or dpkg process holds its locks; waiting up to ${timeout} s"
	until locks_free; do
		if [ $((SECONDS - start)) -ge "$timeout" ]; then
			echo "apt-install: apt's locks still held after ${timeout} s; giving up" >&2
			exit 1
		fi
		sleep 2
	done
	echo "apt-install: the locks are free after $((SECONDS - start)) s"
fi

if [ -n "${PGLEASE_APT_DRY_RUN:-}" ]; then
	echo "apt-install: would install ${missing[*]}"
	exit 0
fi
echo "apt-install: installing ${#missing[@]} Debian packages (${missing[*]}); log: $log"
# The lock options cover a process that takes the locks between the wait
# above and apt's own start.
wait_lock=(-o DPkg::Lock::Timeout="$timeout")
export DEBIAN_FRONTEND=noninteractive
if ! { "${sudo[@]}" apt-get "${wait_lock[@]}" update -qq &&
	"${sudo[@]}" apt-get "${wait_lock[@]}" install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
	tail -20 "$log" >&2
	echo "apt-install: apt-get failed; see $log" >&2
	exit 1
fi
echo "apt-install: done in $((SECONDS - start)) s"
