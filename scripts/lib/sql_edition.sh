# The SQL edition's psql script for scripts and tests: made by its make
# target (Makefile.sql_edition), the one way the generator runs, then
# copied where the caller wants it.
#
#   source scripts/lib/sql_edition.sh
#   sql_edition_psql_script DEST     # DEST: this tree's sql/pg_lease_sql.sql
sql_edition_psql_script()
{
	local root
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	make -s --no-print-directory -C "$root" -f Makefile.sql_edition sql/pg_lease_sql.sql >&2 &&
		cp "$root/sql/pg_lease_sql.sql" "$1"
}
