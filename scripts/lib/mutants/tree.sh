# Part of scripts/mutants.sh, which sources it: the scratch tree and the
# private PostgreSQL.  The system's pg_lease files that must not change, the
# kept copy of the tree, the extension's and the client's builds, the
# rebuild rule of every kind of file a mutant patches, and the check that
# the scratch server runs the scratch build.  Functions only, and the list
# they share; the run's folders (SCRATCH, SRC, BUILD, WORK) are set in main.
# shellcheck shell=bash

# --- the system files that must not change --------------------------------

system_checksums()
{
	find "$PG_SYS_LIB" "$PG_SYS_SHARE/extension" -path '*pg_lease*' \( -type f -o -type l \) \
		-print0 | sort -z | xargs -0 -r sha256sum
}

check_system_unchanged()
{
	if ! diff <(echo "$SYSTEM_SUMS") <(system_checksums) >&2; then
		log "the system's installed pg_lease changed during the run"
		return 1
	fi
	log "system pg_lease files unchanged ($(echo "$SYSTEM_SUMS" | grep -c .) files checked)"
}

# --- scratch tree, private PostgreSQL, builds -----------------------------

# sync_tree STAGE DEST: every file of STAGE whose content differs from its
# copy in DEST (changed in the tree, or left patched by an interrupted run)
# is copied there with a new time, so make rebuilds it; the others keep
# theirs, and their objects stay valid.  Prints how many were copied.
sync_tree()
{
	local stage=$1 dest=$2 rel changed=0
	while IFS= read -r -d '' rel; do
		if ! cmp -s "$stage/$rel" "$dest/$rel"; then
			mkdir -p "$(dirname "$dest/$rel")"
			cp "$stage/$rel" "$dest/$rel"
			changed=$((changed + 1))
		fi
	done < <(cd "$stage" && find . -type f -print0)
	echo "$changed"
}

# drop_stale STAGE DEST: sources gone from the tree go from the copy too
# (PGXS, the SQL edition's build and the suites take these by wildcard: a
# stale expected file left in the copy fails its suite on the good tree).
# zz_minor_stub.c is not the tree's: a major's build adds it (major_stub).
drop_stale()
{
	local stage=$1 dest=$2 rel
	for rel in "$dest"/extension/*.[ch] "$dest"/sql/*.sql "$dest"/sql/sql_edition/*.sql \
		"$dest"/regress/sql/*.sql "$dest"/regress/expected/*.out "$dest"/regress/specs/*.spec \
		"$dest"/regress/sql_edition/expected/*.out; do
		[ "${rel##*/}" != zz_minor_stub.c ] || continue
		if [ -e "$rel" ] && [ ! -e "$stage/${rel#"$dest"/}" ]; then
			rm -f "$rel" "${rel%.c}.o" "${rel%.c}.bc"
		fi
	done
}

# copy_source: the kept copy of the tree in $SRC brought up to date.
copy_source()
{
	local stage=$SCRATCH/stage changed
	mkdir -p "$SRC" "$stage"
	(cd "$ROOT" && git ls-files -co --exclude-standard -z |
		tar -cf - --null --no-recursion -T -) | tar -xf - -C "$stage"
	changed=$(sync_tree "$stage" "$SRC")
	drop_stale "$stage" "$SRC"
	rm -rf "$stage"
	log "kept tree $SRC: $changed files new or changed since the last run"
}

build_extension()
{
	make -s -C "$SRC" -f Makefile.pgxs -j"$JOBS" >"$SCRATCH/ext-build.log" 2>&1 ||
		{ cat "$SCRATCH/ext-build.log" >&2; return 1; }
	make -s -C "$SRC" -f Makefile.pgxs install DESTDIR="$SCRATCH/root" >>"$SCRATCH/ext-build.log" 2>&1 ||
		{ cat "$SCRATCH/ext-build.log" >&2; return 1; }
	[ -z "$(cd "$SCRATCH/root" && find . -path '*pg_lease*' -type l)" ] ||
		die "a link into the system's pg_lease files is in the scratch install"
}

# The client targets the selected mutants' suites need (set in main).
CLIENT_TARGETS=()

# build_client [TARGET...]: the given client targets (default: every one
# the selected mutants need), incrementally.
build_client()
{
	local -a targets=("$@")
	[ ${#targets[@]} -gt 0 ] || targets=("${CLIENT_TARGETS[@]}")
	[ ${#targets[@]} -gt 0 ] || return 0
	# configured once per run: a kept build tree may predate targets that
	# the copied CMakeLists.txt files now define
	if [ ! -f "$BUILD/CMakeCache.txt" ] || [ -z "${CLIENT_CONFIGURED:-}" ]; then
		cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$SCRATCH/client-build.log" 2>&1 ||
			{ cat "$SCRATCH/client-build.log" >&2; return 1; }
		CLIENT_CONFIGURED=1
	fi
	cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" >>"$SCRATCH/client-build.log" 2>&1 ||
		{ tail -50 "$SCRATCH/client-build.log" >&2; return 1; }
}

# rebuild FILE: rebuild (and for the extension reinstall) what FILE is part
# of; fails if it does not build (the cluster runs again either way).  A
# rule for every kind of file a mutant patches.  The other majors' builds
# follow in prepare_majors, when a suite of theirs runs.
rebuild()
{
	case $1 in
	extension/*)
		pg_cluster_stop mut
		build_extension || { pg_cluster_start mut >/dev/null; return 1; }
		pg_cluster_start mut >/dev/null
		;;
	# The SQL edition: no module, nothing to compile.  Its suites generate
	# its script from the scratch tree when they run; make generates the
	# install's pg_lease_sql scripts (CREATE EXTENSION pg_lease_sql) again.
	sql/sql_edition/* | scripts/sql_edition.py) build_extension ;;
	sql/*)
		pg_cluster_stop mut
		build_extension || { pg_cluster_start mut >/dev/null; return 1; }
		pg_cluster_start mut >/dev/null
		# the database the cli and integration suites use: the objects
		# of the script just installed, not the ones it had
		# (the CASCADE's NOTICE per dropped object stays out of the log)
		PGOPTIONS="-c client_min_messages=warning" psql -X -q \
			-c "DROP EXTENSION IF EXISTS pg_lease CASCADE" -c "CREATE EXTENSION pg_lease" >/dev/null
		;;
	# only what this mutant's suites run: a target left behind is rebuilt,
	# from the reverted source, by the next mutant or run that needs it
	client/*) build_client "${MUTANT_TARGETS[@]}" ;;
	*) die "no rule to rebuild $1" ;;
	esac
}

# check_scratch_loaded [SO]: the server of the PG* variables runs the
# scratch copy of the extension (SO; default the private 15 install's),
# never the system's or the majors' cache's: a backend that used a lease
# function maps exactly one pg_lease.so.
check_scratch_loaded()
{
	local maps want=${1:-$SCRATCH/root$PG_SYS_LIB/pg_lease.so}
	maps=$(psql -X -q -A -t -c "SELECT lease_revoke('mutants-probe')" \
		-c "SELECT pg_read_file('/proc/' || pg_backend_pid() || '/maps')" | grep 'pg_lease\.so' | awk '{print $6}' | sort -u)
	[ "$maps" = "$want" ] || die "the scratch server loaded '$maps', not $want"
	log "the scratch server runs $maps"
}
