#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing pg_lease need,
# only those that are missing. Runs as root, or through sudo.
set -euo pipefail

packages=(
	build-essential cmake pkg-config clang
	postgresql-15 postgresql-server-dev-15 postgresql-contrib
	libpq-dev libpqxx-dev
	googletest libgtest-dev libgmock-dev libbenchmark-dev libclang-rt-14-dev
	libcli11-dev libfmt-dev nlohmann-json3-dev
	libfaketime pgbouncer procps iproute2 python3 libhiredis-dev libcurl4-openssl-dev
	etcd-server etcd-client redis-server redis-tools
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
