#!/usr/bin/env bash
# Builds the Debian package of the extension for another PostgreSQL major,
# named as Debian names extension packages:
#
#   scripts/package-major.sh N OUTDIR     # N in 13 15 17 18
#
# prints the path of OUTDIR/postgresql-N-pg-lease_VERSION_ARCH.deb.  It
# installs where Debian's postgresql-N looks (/usr/lib/postgresql/N/lib,
# /usr/share/postgresql/N/extension) and depends on postgresql-N.  The
# headers are Debian's postgresql-server-dev-N, fetched once by
# scripts/pg-major.sh (which also gives a server of N to try it on:
# tests/packages/major.sh).  The system's own major also comes from cpack
# (cmake/packaging.cmake), with the library and the command.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
say() { echo "package-major: $*" >&2; }

major=${1:-}
out=${2:-}
[ -n "$major" ] && [ -n "$out" ] || { say "usage: $0 N OUTDIR"; exit 1; }
"$here/scripts/pg-major.sh" "$major" >/dev/null
cache=${PGLEASE_MAJORS_CACHE:-/var/cache/pglease/majors/$major}
mkdir -p "$out"
out=$(cd "$out" && pwd)

version=$(sed -n 's/^project(pg_lease VERSION \([0-9.]*\).*/\1/p' "$here/CMakeLists.txt")
[ -n "$version" ] || { say "no version in CMakeLists.txt"; exit 1; }
arch=$(dpkg --print-architecture)

# A build of its own, from Debian's headers alone: nothing of the cached
# server's tree (pg-major.sh's stand-in for a symbol that an older minor
# lacks never goes into a package).
build=$cache/package-build
stage=$cache/package-stage
rm -rf "$build" "$stage"
mkdir -p "$build" "$stage/DEBIAN"
source "$here/scripts/lib/extension_sources.sh"
copy_extension_sources "$here" "$build"
pgmake=(make -s -C "$build" -f Makefile.pgxs PG_CONFIG="$cache/pg_config")
"${pgmake[@]}" COPT="-Werror" -j2 >&2
# Debian's folders for major N, in place of the cached tree's.
"${pgmake[@]}" install DESTDIR="$stage" \
	pkglibdir="/usr/lib/postgresql/$major/lib" datadir="/usr/share/postgresql/$major" >&2

cat >"$stage/DEBIAN/control" <<CONTROL
Package: postgresql-$major-pg-lease
Version: $version
Architecture: $arch
Maintainer: pg_lease developers <pg-lease@example.invalid>
Section: database
Priority: optional
Depends: postgresql-$major, libc6
Description: pg_lease extension for PostgreSQL $major
 Leases, fencing tokens and the fence trigger: lease-based leader election
 inside PostgreSQL ($(sed -n 's/^default_version = //p' "$here/extension/pg_lease.control" | tr -d "'")).
CONTROL
deb=$out/postgresql-${major}-pg-lease_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >&2
echo "$deb"
