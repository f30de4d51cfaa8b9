# copy_extension_sources FROM TO [DIR...]: the extension's build inputs
# (Makefile.pgxs, extension/, sql/, Makefile.sql_edition and
# scripts/sql_edition.py that make the SQL edition's scripts, and each DIR given, e.g. the regression suites)
# from the tree FROM into TO, paths kept. Sourced by
# scripts/pg-major.sh and scripts/package-major.sh, which build outside the
# worktree.
copy_extension_sources()
{
	local from=$1 to=$2
	shift 2
	(cd "$from" && find Makefile.pgxs Makefile.sql_edition extension sql scripts/sql_edition.py "$@" -type f \
		\( -name 'Makefile.*' -o -name '*.[ch]' -o -name '*.control' \
		-o -name '*.sql' -o -name '*.out' -o -name '*.spec' -o -name sql_edition.py \) -print0 |
		xargs -0 cp --parents -t "$to")
}
