# A private copy of the system's PostgreSQL 15, for tests that install a
# pg_lease build of their own (an older version, a mutant) without touching
# the system's.  Sourced by bash scripts:
#
#   source tests/harness/private_postgres.sh
#   private_postgres_make DIR      # DIR/root: binaries copied, lib and share
#                                  # mirrored by symlinks, no pg_lease files;
#                                  # sets PG_BIN for pg_cluster.sh
#   make -f Makefile.pgxs install DESTDIR=DIR/root
#
# The server finds its lib and share directories from its own resolved
# path, so it loads the pg_lease installed under DIR/root.

PG_SYS_BIN=/usr/lib/postgresql/15/bin
PG_SYS_LIB=/usr/lib/postgresql/15/lib
PG_SYS_SHARE=/usr/share/postgresql/15

# private_postgres_mirror FROM TO: real directories, a symlink per file, and
# nothing of pg_lease (pg_lease.so, bitcode/pg_lease/..., extension/pg_lease*):
# an install there must create real files, never write through a link.
private_postgres_mirror()
{
	local from=$1 to=$2 rel
	(cd "$from" && find . -type d ! -path '*pg_lease*') | while read -r rel; do mkdir -p "$to/$rel"; done
	(cd "$from" && find . \( -type f -o -type l \) ! -path '*pg_lease*') |
		while read -r rel; do ln -s "$from/${rel#./}" "$to/$rel"; done
}

private_postgres_make()
{
	local dir=$1
	PG_BIN=$dir/root$PG_SYS_BIN
	mkdir -p "$PG_BIN"
	# copies, not symlinks: the server finds its share and lib dirs from its
	# own resolved path
	cp -L "$PG_SYS_BIN"/* "$PG_BIN/"
	private_postgres_mirror "$PG_SYS_LIB" "$dir/root$PG_SYS_LIB"
	private_postgres_mirror "$PG_SYS_SHARE" "$dir/root$PG_SYS_SHARE"
	chmod -R a+rX "$dir"
	export PG_BIN
}
