#!/usr/bin/env python3
"""Build the SQL edition (pg_lease_sql) from the one full install script.

    scripts/sql_edition.py --form psql [--schema S] > pg_lease_sql.sql
    scripts/sql_edition.py --form extension > pg_lease_sql--1.5.sql
    scripts/sql_edition.py --form pg_tle > pg_lease_sql_tle.sql

The tables, views, types, grants and comments come from
sql/pg_lease--<current>.sql, untouched. Each function written in C there
is replaced, in place, by the edition's definition of the same function
from sql/sql_edition/*.sql: a statement that starts with the very line
that starts the C one, followed by its body from its LANGUAGE line on (the
signature is taken from the full script, so it is written once).
Everything else in those files (the edition's own
helpers) goes just before the first replaced function. A C function
without a replacement, or a replacement without its C function, is an
error: the two editions keep one contract.

--form psql: a script a database owner runs with psql -f (no superuser):
the schema (default public) is fixed when the script is built, and the
calls that only an extension script may make (pg_extension_config_dump)
are left out. --form extension: the install script of CREATE EXTENSION
pg_lease_sql (a trusted extension with no module). --form pg_tle: the
same script inside pgtle.install_extension(), for Amazon RDS and Aurora.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOLLAR = re.compile(r"\$[A-Za-z_0-9]*\$")


def statements(lines):
    """Split SQL lines into statements (leading comments attached), aware
    of dollar quotes: a statement ends at a line ending in ';' outside them."""
    out, current, quote = [], [], None
    for line in lines:
        current.append(line)
        for tag in DOLLAR.findall(line):
            if quote is None:
                quote = tag
            elif tag == quote:
                quote = None
        if quote is None and line.rstrip().endswith(";"):
            out.append(current)
            current = []
    if any(l.strip() for l in current):
        out.append(current)
    return out


def first_code_line(stmt):
    for line in stmt:
        if line.strip() and not line.lstrip().startswith("--"):
            return line.rstrip("\n")
    return ""


def splice(c_stmt, twin):
    """The C function's signature (its lines before AS 'MODULE_PATHNAME':
    written once, in the full script) and the twin's body (from its first
    LANGUAGE line: the twin names the function by its first line only)."""
    sig_end = next(i for i, l in enumerate(c_stmt) if re.match(r"\s*AS 'MODULE_PATHNAME'", l))
    start = next((i for i, l in enumerate(c_stmt) if l.strip() and
                  not l.lstrip().startswith("--")), 0)
    body_at = next((i for i, l in enumerate(twin) if re.match(r"\s*LANGUAGE ", l)), None)
    if body_at is None:
        sys.exit(f"sql_edition: the twin of {first_code_line(twin)} has no LANGUAGE line")
    lead = [l for l in twin[:next(i for i, l in enumerate(twin) if l.strip() and
                                 not l.lstrip().startswith("--"))]]
    return lead + c_stmt[start:sig_end] + twin[body_at:]


def is_c_function(stmt):
    head = first_code_line(stmt)
    return head.startswith("CREATE FUNCTION ") and any(
        re.search(r"\bLANGUAGE C\b", l) for l in stmt)


def current_script():
    scripts = []
    for p in (ROOT / "sql").glob("pg_lease--*.sql"):
        m = re.fullmatch(r"pg_lease--(\d+)\.(\d+)\.sql", p.name)
        if m:
            scripts.append(((int(m.group(1)), int(m.group(2))), p))
    if not scripts:
        sys.exit("sql_edition: no full install script sql/pg_lease--X.Y.sql")
    return max(scripts)


def version_function(version):
    """lease_sql_version(): which edition and version a database has, for
    clients (pq_backend::installation, `pglease status --server`) where no
    pg_extension row tells (the psql form). Its presence names the edition."""
    v = f"{version[0]}.{version[1]}"
    return [
        "-- The SQL edition's version (no pg_extension row says it after psql -f);\n",
        "-- clients read it to tell the editions apart. Built by scripts/sql_edition.py.\n",
        "CREATE FUNCTION @extschema@.lease_sql_version()\n",
        "\tRETURNS text\n",
        "\tLANGUAGE sql IMMUTABLE PARALLEL SAFE\n",
        f"\tAS $version$SELECT '{v}'::text$version$;\n",
        "COMMENT ON FUNCTION @extschema@.lease_sql_version() IS\n",
        "\t'the version of pg_lease_sql (the SQL edition) installed in this schema';\n",
        "\n",
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--form", choices=["psql", "extension", "pg_tle"], required=True)
    ap.add_argument("--schema", default="public")
    args = ap.parse_args()
    version, shared = current_script()

    # Without the extension script's guard against psql -f.
    shared_stmts = statements([l for l in shared.read_text().splitlines(keepends=True)
                               if not l.startswith("\\echo")])
    c_heads = {first_code_line(s) for s in shared_stmts if is_c_function(s)}

    # The edition's statements: replacements of C functions, and helpers.
    replacements, helpers = {}, []
    for path in sorted((ROOT / "sql" / "sql_edition").glob("*.sql")):
        for stmt in statements(path.read_text().splitlines(keepends=True)):
            head = first_code_line(stmt)
            if head in c_heads:
                if head in replacements:
                    sys.exit(f"sql_edition: {path.name}: {head} is defined twice")
                replacements[head] = stmt
            else:
                helpers.append(stmt)

    # The shared script, each C function replaced in place (its leading
    # comments, which describe the C code, go with it).
    body, inserted = [], False
    for stmt in shared_stmts:
        if not is_c_function(stmt):
            body.extend(stmt)
            continue
        head = first_code_line(stmt)
        if head not in replacements:
            sys.exit(f"sql_edition: no SQL edition of the C function: {head}")
        if not inserted:
            body.extend(version_function(version))
            for helper in helpers:
                body.extend(helper)
            inserted = True
        body.extend(splice(stmt, replacements[head]))

    text = "".join(body)
    if re.search(r"\bLANGUAGE C\b|MODULE_PATHNAME", text):
        sys.exit("sql_edition: C left in the SQL edition")
    name = f"pg_lease_sql {version[0]}.{version[1]}"
    if args.form == "pg_tle":
        # Amazon RDS and Aurora: the extension script registered with
        # pg_tle, then CREATE EXTENSION pg_lease_sql (not tried here).
        if "$_pgtle_$" in text:
            sys.exit("sql_edition: the script contains pg_tle's quote $_pgtle_$")
        sys.stdout.write(
            f"-- {name}: the SQL edition of pg_lease, registered with pg_tle; then\n"
            "-- CREATE EXTENSION pg_lease_sql. Built by scripts/sql_edition.py.\n"
            "SELECT pgtle.install_extension('pg_lease_sql', "
            f"'{version[0]}.{version[1]}', "
            "'leases with fencing tokens, in SQL and PL/pgSQL: the SQL edition of pg_lease', "
            "$_pgtle_$\n" + text + "$_pgtle_$);\n")
        return
    if args.form == "extension":
        header = (f"-- {name}: the SQL edition of pg_lease (no C), built by scripts/sql_edition.py\n"
                  f"-- from {shared.relative_to(ROOT)} and sql/sql_edition/*.sql.\n"
                  '\\echo Use "CREATE EXTENSION pg_lease_sql" to load this file. \\quit\n\n')
        sys.stdout.write(header + text)
        return
    schema = '"' + args.schema.replace('"', '""') + '"'
    text = "".join(l for l in text.splitlines(keepends=True)
                   if "pg_extension_config_dump" not in l)
    text = text.replace("@extschema@", schema).replace("@extowner@", "CURRENT_USER")
    header = (f"-- {name}: the SQL edition of pg_lease (no C), for psql -f by the\n"
              f"-- database's owner, into schema {schema}. Built by scripts/sql_edition.py\n"
              f"-- from {shared.relative_to(ROOT)} and sql/sql_edition/*.sql.\n"
              "\\set ON_ERROR_STOP on\n"
              "BEGIN;\n"
              + (f"CREATE SCHEMA IF NOT EXISTS {schema};\n" if args.schema != "public" else "")
              + f"SET LOCAL search_path = {schema}, pg_catalog;\n\n")
    sys.stdout.write(header + text + "\nCOMMIT;\n")


if __name__ == "__main__":
    main()
