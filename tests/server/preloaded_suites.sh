#!/usr/bin/env bash
# The pg_regress suites and isolation specs again, on a server with pg_lease
# in shared_preload_libraries.  Preloaded, a session keeps its lease rows
# across transactions while they are unchanged (extension/fence_cache.c)
# and notifications leave through the notifier's queue; the main test
# server runs without preloading.  The outcomes must be the same: the same
# expected files, or the *_1.out variant where preloading changes what
# PostgreSQL itself allows (PREPARE TRANSACTION after a NOTIFY).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/../harness/pg_cluster.sh"

pg_cluster_start preloaded -c shared_preload_libraries=pg_lease
out=$(mktemp -d /tmp/pg_lease_preloaded_out.XXXXXX)
trap 'pg_cluster_stop_all; rm -rf "$out"' EXIT

cd "$root"
status=0
make -s -f Makefile.pgxs installcheck \
	REGRESS_OPTS="--inputdir=regress --outputdir=$out/regress --load-extension=pg_lease" \
	ISOLATION_OPTS="--inputdir=regress --outputdir=$out/isolation --load-extension=pg_lease" ||
	status=$?
if [ $status -ne 0 ]; then
	cat "$out"/*/regression.diffs 2>/dev/null | head -300
fi
exit $status
