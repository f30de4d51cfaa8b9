#!/usr/bin/env bash
# Builds another libpqxx from the source snapshots in ../shared/vendor once
# per machine, into a cache outside the repository, for the suites that
# build the client against it (tests/platforms).
#
#   scripts/libpqxx.sh 7.10.7        # GCC 12, libstdc++, C++17
#   scripts/libpqxx.sh 8.0.1         # clang-16, libc++-16, C++20 (<format>)
#
# The last (and only) line on stdout is the install prefix
# (${PGLEASE_LIBPQXX_CACHE:-/var/cache/pglease/libpqxx}/VERSION), holding
# include/, lib/ (shared), lib/cmake/libpqxx and lib/pkgconfig.  Progress
# goes to stderr.  A tarball whose sha256 is not the one the vendor README
# names is refused.  The toolchain each version needs is in
# cmake/libpqxx-toolchain.sh, shared with the suites that link against it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

say() { echo "libpqxx: $*" >&2; }
die() { say "$*"; exit 1; }

version=${1:-}
case "$version" in
	7.10.7) sha=12cb24ea87c7b7bd16d5649e34b6aa26e711e001e5ff0616cc7d0f4f26c2215b ;;
	8.0.1) sha=a00279e8ae137a7dce252b08719a7474968153b77681dcc95ea196baa65d28b9 ;;
	*) die "usage: $0 VERSION (7.10.7 or 8.0.1)" ;;
esac

# shellcheck source=../cmake/libpqxx-toolchain.sh
source "$here/cmake/libpqxx-toolchain.sh"
pqxx_toolchain "$version"

cache=${PGLEASE_LIBPQXX_CACHE:-/var/cache/pglease/libpqxx}
prefix=$cache/$version
if [ -f "$prefix/.built" ]; then
	echo "$prefix"
	exit 0
fi

vendor=${PGLEASE_VENDOR:-$here/../shared/vendor}
tarball=$vendor/libpqxx-$version.tar.gz
[ -f "$tarball" ] || die "no $tarball (the vendor snapshots live in shared/vendor beside the checkout)"
echo "$sha  $tarball" | sha256sum -c --quiet - >&2 || die "$tarball: checksum differs from the vendor README's"

if [ "$PQXX_STDLIB" = libc++ ] && ! command -v "$PQXX_CXX" >/dev/null; then
	say "installing clang-16 and libc++-16 (Debian 12)"
	"$here/scripts/apt-install.sh" clang-16 libc++-16-dev libc++abi-16-dev >&2
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/build-$version.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
src=$work/libpqxx-$version
start=$SECONDS
say "building $version with $PQXX_CXX ($PQXX_STDLIB, C++$PQXX_STD) into $prefix"
rm -rf "$prefix"
CXX=$PQXX_CXX CXXFLAGS=$PQXX_CXXFLAGS LDFLAGS=$PQXX_LDFLAGS \
	cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
	-DSKIP_BUILD_TEST=ON -DBUILD_DOC=OFF -DCMAKE_CXX_STANDARD="$PQXX_STD" \
	-DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib >"$work/configure.log" 2>&1 ||
	{ tail -30 "$work/configure.log" >&2; die "configure failed"; }
cmake --build "$work/build" -j "$(nproc)" >"$work/build.log" 2>&1 ||
	{ tail -40 "$work/build.log" >&2; die "build failed"; }
cmake --install "$work/build" >/dev/null
touch "$prefix/.built"
say "built in $((SECONDS - start)) s"
echo "$prefix"
