#!/usr/bin/env bash
# The extension's Debian package for another PostgreSQL major
# (scripts/package-major.sh): its name, version, dependency and files are
# Debian's for postgresql-N, and the library and scripts it carries, put
# where a server of that major looks, load and grant a lease there.
#
#   tests/packages/major.sh N
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tree=$(cd "$here/../.." && pwd)
major=$1
source "$here/../server/lib.sh"
source "$here/../harness/pg_cluster.sh"
work=$PG_CLUSTER_ROOT
trap 'pg_cluster_stop_all; rm -rf "$work"' EXIT

# Both scripts run from a clean copy of the tree, as a fresh clone has it:
# the tracked files only, none that a build makes (issue 52: the SQL
# edition's scripts are made from scripts/sql_edition.py, which a build
# outside the worktree must carry along).
src=$work/clean
mkdir -p "$src"
git -C "$tree" rev-parse --is-inside-work-tree >/dev/null ||
	{ echo "packages.major: $tree is no git work tree (a clean copy needs its file list)"; exit 1; }
(cd "$tree" && git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	xargs -0 cp -p --parents -t "$src")
bin=$("$src/scripts/pg-major.sh" "$major" 2>"$work/pg-major.log" | tail -n 1) ||
	{ cat "$work/pg-major.log"; exit 1; }
check "scripts/pg-major.sh $major builds and installs pg_lease from a clean tree" test -x "$bin/postgres"

deb=$("$src/scripts/package-major.sh" "$major" "$work/debs" 2>"$work/package.log") ||
	{ cat "$work/package.log"; exit 1; }
version=$(sed -n 's/^project(pg_lease VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
field() { dpkg-deb -f "$deb" "$1"; }
check "named as Debian names it ($(basename "$deb"))" \
	test "$(basename "$deb")" = "postgresql-${major}-pg-lease_${version}_$(dpkg --print-architecture).deb"
check "package postgresql-$major-pg-lease" test "$(field Package)" = "postgresql-$major-pg-lease"
check "version $version" test "$(field Version)" = "$version"
check "depends on postgresql-$major" grep -qw "postgresql-$major" <<<"$(field Depends)"

files=$(dpkg-deb -c "$deb" | awk '{print $6}')
has() { grep -qx "./$1" <<<"$files"; }
check "the library where postgresql-$major loads it" has "usr/lib/postgresql/$major/lib/pg_lease.so"
check "the control file" has "usr/share/postgresql/$major/extension/pg_lease.control"
missing=""
for f in "$src"/sql/pg_lease--*.sql; do
	has "usr/share/postgresql/$major/extension/$(basename "$f")" || missing="$missing $(basename "$f")"
done
check "every install and update script${missing:+ (missing:$missing)}" test -z "$missing"
check "nothing outside Debian's folders for $major" \
	test -z "$(grep -v -e '^\./$' -e '^\./usr/$' -e '^\./usr/lib/$' -e '^\./usr/share/$' \
		-e "^\./usr/lib/postgresql/\(\|$major/\|$major/lib/.*\)$" \
		-e "^\./usr/share/postgresql/\(\|$major/\|$major/extension/.*\)$" <<<"$files")"

# The package's files in a copy of a server tree of that major.
tree=$work/tree
cp -a "$(dirname "$bin")" "$tree"
dpkg-deb -x "$deb" "$work/x"
cp "$work/x/usr/lib/postgresql/$major/lib/pg_lease.so" "$tree/lib/postgresql/"
cp "$work/x/usr/share/postgresql/$major/extension/"* "$tree/share/postgresql/extension/"
# Debian's headers can be of a newer minor than the cached server, whose
# postgres may then lack a function the library calls (pg-major.sh says
# which): that server gets a stand-in, preloaded; the package has none.
lacks=$(comm -23 \
	<(nm -D --undefined-only "$tree/lib/postgresql/pg_lease.so" | awk '$1 == "U" {print $2}' | grep -v @ | sort) \
	<(nm -D --defined-only "$tree/bin/postgres" | awk '{print $3}' | sort))
preload=""
if [ -n "$lacks" ]; then
	check "only heap_datum_check is newer than this server (lacks: $lacks)" test "$lacks" = heap_datum_check
	printf 'void heap_datum_check(void *t, void *d) { (void) t; (void) d; }\n' >"$work/stub.c"
	cc -shared -fPIC -o "$work/stub.so" "$work/stub.c"
	chmod 0755 "$work" "$work/stub.so"
	preload=$work/stub.so
fi
PG_BIN=$tree/bin
pg_cluster_init pkg
LD_PRELOAD=$preload pg_cluster_start pkg >/dev/null
epoch=$(psql -X -q -At -c "CREATE EXTENSION pg_lease" \
	-c "SELECT epoch FROM lease_acquire('pkg', 'me', '10s')" | tail -n 1)
check "CREATE EXTENSION from the package on $major, and a grant (epoch $epoch)" test "${epoch:-0}" -gt 0
check "the installed version is the package's default ($(psql -X -At -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'"))" \
	test "$(psql -X -At -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_lease'")" = \
	"$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$src/extension/pg_lease.control")"
finish
