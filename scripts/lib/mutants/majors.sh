# Part of scripts/mutants.sh, which sources it: other PostgreSQL majors
# (SUITE@N).  A suite's major, the private copy of scripts/pg-major.sh's
# cache of N, the scratch tree's extension built for N in a kept folder of
# its own and installed into that copy, and the scratch cluster of N.
# Functions only, and the tables they share.
# shellcheck shell=bash

# --- other PostgreSQL majors (SUITE@N) ------------------------------------

# suite_major SUITE: N of SUITE@N, else nothing; suite_base SUITE: the
# suite without its @N.
suite_major() { if [[ $1 =~ @([0-9]+)$ ]]; then echo "${BASH_REMATCH[1]}"; fi; }
suite_base() { echo "${1%@[0-9]*}"; }

# The SQL edition's suites install no module: on another major they need
# its server, not the extension built for it.
suite_needs_module()
{
	case $(suite_base "$1") in sql-integration* | sql-cli* | sql-fault*) return 1 ;; esac
}

# The suites that run against the scratch cluster (the others start
# clusters of their own from PG_BIN).
suite_uses_scratch_cluster()
{
	case $(suite_base "$1") in regress:* | iso:* | integration:* | cli:*) return 0 ;; esac
	return 1
}

major_cache() { echo "${PGLEASE_MAJORS_CACHE:-/var/cache/pglease/majors/$1}"; }
major_bin() { echo "$SCRATCH/majors/$1/native/bin"; }

# major_copy N: a copy of scripts/pg-major.sh's tree of PostgreSQL N (its
# server, test drivers, Debian headers and pg_config shim) without any
# pg_lease file, the paths in its scripts pointed at the copy.  The cache
# is only read: the test command builds and installs pg_lease there (one
# suite of N at a time, CTest's lock major_N), so this run neither
# disturbs those suites nor runs what they installed.
major_copy()
{
	local n=$1 cache own=$SCRATCH/majors/$1 f
	[ -d "$own" ] && return 0
	cache=$(major_cache "$n")
	if [ ! -x "$cache/native/bin/postgres" ] || [ ! -x "$cache/pg_config" ] ||
		[ ! -d "$cache/deb/usr/include/postgresql/$n/server" ]; then
		die "no PostgreSQL $n in $cache: scripts/pg-major.sh $n (as root) fetches it once"
	fi
	cache=$(cd "$cache" && pwd)
	mkdir -p "$own"
	(cd "$cache" && tar -cf - --exclude='*pg_lease*' native deb pg_config) | tar -xf - -C "$own"
	# the shim and the test drivers' wrappers name the cache's folders
	{ grep -rlIF "$cache/" "$own/pg_config" "$own/native" || true; } |
		while IFS= read -r f; do sed -i "s|$cache/|$own/|g" "$f"; done
	chmod -R a+rX "$own"
	log "PostgreSQL $n: $("$own/native/bin/postgres" --version), copied from $cache"
}

# What the objects of a kept build of N were compiled against: a new
# server or headers (another minor) make them worthless.
major_stamp()
{
	local cache
	cache=$(major_cache "$1")
	cat "$cache/npm-version" 2>/dev/null || true
	sha256sum <"$SCRATCH/majors/$1/deb/usr/include/postgresql/$1/server/pg_config.h"
}

# major_build N: the scratch tree's extension built for N in a build folder
# of its own, kept between runs in $WORK/majors/N (PGXS builds in place,
# and the scratch tree's objects are 15's): only the files that changed
# since are copied there and rebuilt.  Installed into the copy of N once
# per run and after every change; MAJOR_FRESH[N] says so until the scratch
# cluster of N is started again.
declare -A MAJOR_INSTALLED=() MAJOR_FRESH=()
major_build()
{
	local n=$1 own=$SCRATCH/majors/$1 build=$WORK/majors/$1 stage=$SCRATCH/majors/$1-stage
	local stamp changed blog=$SCRATCH/majors/$1-build.log
	local -a pgmake=(make -s -C "$build" -f Makefile.pgxs PG_CONFIG="$own/pg_config")
	stamp=$(major_stamp "$n")
	if [ "$(cat "$build/.stamp" 2>/dev/null)" != "$stamp" ]; then
		rm -rf "$build"
		mkdir -p "$build"
		echo "$stamp" >"$build/.stamp"
	fi
	rm -rf "$stage"
	mkdir -p "$stage"
	copy_extension_sources "$SRC" "$stage" regress/sql regress/expected regress/specs
	changed=$(sync_tree "$stage" "$build")
	drop_stale "$stage" "$build"
	rm -rf "$stage"
	[ "$changed" -eq 0 ] && [ -n "${MAJOR_INSTALLED[$n]:-}" ] && return 0
	# an earlier install's scripts go first: one the tree no longer has
	# (an old version's full script) must not stay installed
	{
		"${pgmake[@]}" -j"$JOBS" && major_stub "$n" &&
			rm -f "$("$own/pg_config" --sharedir)"/extension/pg_lease[-.]* &&
			"${pgmake[@]}" install
	} >"$blog" 2>&1 || { tail -50 "$blog" >&2; return 1; }
	[ -z "$(cd "$own" && find . -path '*pg_lease*' -type l)" ] ||
		die "a link into another tree's pg_lease files is in the copy of PostgreSQL $n"
	MAJOR_INSTALLED[$n]=1
	MAJOR_FRESH[$n]=1
	log "PostgreSQL $n: $changed files new or changed, pg_lease built and installed in its copy"
}

# major_stub N: as scripts/pg-major.sh does.  Debian's headers can be of a
# newer minor than npm's server (17.12 against 17.10), and heap_getattr
# there calls heap_datum_check, which the older server lacks; it only looks
# at tuples that an older server never writes, so an empty one stands in.
# Anything else missing fails the build.
major_stub()
{
	local n=$1 build=$WORK/majors/$1 missing
	missing=$(comm -23 \
		<(nm -D --undefined-only "$build/pg_lease.so" | awk '$1 == "U" {print $2}' | grep -v @ | sort) \
		<(nm -D --defined-only "$SCRATCH/majors/$n/native/bin/postgres" | awk '{print $3}' | sort))
	[ -n "$missing" ] || return 0
	if [ "$missing" != heap_datum_check ] || [ -e "$build/extension/zz_minor_stub.c" ]; then
		echo "pg_lease.so needs what the PostgreSQL $n server lacks: $missing"
		return 1
	fi
	cat >"$build/extension/zz_minor_stub.c" <<'STUB'
#include "postgres.h"
#include "access/htup_details.h"

void
heap_datum_check(HeapTupleHeader tup, TupleDesc tupleDesc)
{
}
STUB
	make -s -C "$build" -f Makefile.pgxs PG_CONFIG="$SCRATCH/majors/$n/pg_config" -j"$JOBS"
}

# major_cluster_start N: the scratch cluster of N ("mutN", with CREATE
# EXTENSION pg_lease) for the suites that use the scratch cluster; the
# tool's own PG* variables name the cluster of 15 again afterwards.
declare -A MAJOR_CLUSTER=()
major_cluster_start()
{
	local n=$1
	PG_BIN=$(major_bin "$n") pg_cluster_start "mut$n" >/dev/null || return 1
	PGOPTIONS="-c client_min_messages=warning" psql -X -q \
		-c "DROP EXTENSION IF EXISTS pg_lease CASCADE" -c "CREATE EXTENSION pg_lease" >/dev/null
	check_scratch_loaded "$SCRATCH/majors/$n/native/lib/postgresql/pg_lease.so"
	pg_cluster_use mut
	MAJOR_CLUSTER[$n]=1
	MAJOR_FRESH[$n]=""
}

major_cluster_stop()
{
	PG_BIN=$(major_bin "$1") pg_cluster_stop "mut$1"
	MAJOR_CLUSTER[$1]=""
}

# prepare_majors SUITE...: every major these suites name, ready for them:
# its copy; unless only the SQL edition's suites use it, the extension of
# the scratch tree as it is now, built and installed there; and the
# scratch cluster of N, started again after an install, if a suite uses
# it.  Cheap when nothing changed.  Fails if the tree does not build for N.
prepare_majors()
{
	local suite n
	local -A module=() cluster=()
	for suite; do
		n=$(suite_major "$suite")
		[ -n "$n" ] || continue
		major_copy "$n"
		if suite_needs_module "$suite"; then module[$n]=1; fi
		if suite_uses_scratch_cluster "$suite"; then cluster[$n]=1; fi
	done
	for n in "${!module[@]}"; do
		major_build "$n" || { log "the scratch tree does not build for PostgreSQL $n"; return 1; }
		if [ -n "${cluster[$n]:-}" ] && { [ -z "${MAJOR_CLUSTER[$n]:-}" ] || [ -n "${MAJOR_FRESH[$n]:-}" ]; }; then
			major_cluster_stop "$n"
			major_cluster_start "$n"
		fi
	done
}
