#!/usr/bin/env bash
# Installs the named Debian packages that are missing, waiting (with a
# bound) for another apt or dpkg process to let go of its locks, as the
# unattended upgrades of a fresh cloud machine hold them for minutes.
#
#   scripts/apt-install.sh PACKAGE...
set -euo pipefail

missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
wait_lock=(-o DPkg::Lock::Timeout="${PGLEASE_APT_LOCK_TIMEOUT:-600}")
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get "${wait_lock[@]}" update -qq
"${sudo[@]}" apt-get "${wait_lock[@]}" install -y -qq --no-install-recommends "${missing[@]}"
