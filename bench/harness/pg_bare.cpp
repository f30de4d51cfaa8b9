/// @file pg_bare.cpp
/// @brief The bare UPDATE reference of the lease figures.
#include "pg_bare.hpp"

namespace bench {

namespace {

/// Derived from the extension's table, never a copy of it: its columns,
/// defaults, constraints and indexes (LIKE ... INCLUDING ALL), then its
/// storage parameters (fillfactor), which LIKE does not take.
/// %S: the bare schema; %E: the extension's schema with a dot.
const char* bare_table_sql = R"(
CREATE TABLE %S.leases (LIKE %Eleases INCLUDING ALL);
DO $$
BEGIN
    EXECUTE coalesce((SELECT format('ALTER TABLE %S.leases SET (%s)',
                                    array_to_string(reloptions, ', '))
                      FROM pg_catalog.pg_class WHERE oid = '%Eleases'::regclass),
                     'SELECT');
END
$$;
CREATE SEQUENCE %S.epoch_seq AS bigint MINVALUE 1;
)";

} // namespace

std::string subst(std::string sql, const std::string& schema) {
    for (std::size_t at = sql.find("%S"); at != std::string::npos; at = sql.find("%S", at))
        sql.replace(at, 2, schema);
    return sql;
}

void create_bare_leases(pg_session& db, const std::string& schema, const std::string& ext) {
    std::string sql = subst(bare_table_sql, schema);
    for (std::size_t at = sql.find("%E"); at != std::string::npos;
         at = sql.find("%E", at + ext.size()))
        sql.replace(at, 2, ext);
    db.exec(sql);
}

void prepare_lease_statements(pg_session& db, bool bare, const std::string& ext,
                              const std::string& bs) {
    if (!bare) {
        db.prepare("acq",
                   "SELECT acquired, epoch FROM " + ext + "lease_acquire($1, $2, $3::interval)");
        db.prepare("ren", "SELECT " + ext + "lease_renew($1, $2, $3::bigint)");
        db.prepare("rel", "SELECT " + ext + "lease_release($1, $2, $3::bigint)");
        return;
    }
    // The same three operations, each one conditional UPDATE ... RETURNING.
    db.prepare(
        "acq",
        subst("UPDATE %S.leases SET holder = $2, epoch = nextval('%S.epoch_seq'),"
              " acquired_at = clock_timestamp(), renewed_at = clock_timestamp(),"
              " expires_at = clock_timestamp() + $3::interval, ttl = $3::interval,"
              " transitions = transitions + CASE WHEN holder IS DISTINCT FROM $2 THEN 1 ELSE 0 END,"
              " owner_role = current_user"
              " WHERE name = $1 AND (holder IS NULL OR expires_at <= clock_timestamp())"
              " RETURNING true, epoch",
              bs));
    db.prepare("ren", subst("UPDATE %S.leases SET renewed_at = clock_timestamp(),"
                            " expires_at = clock_timestamp() + ttl"
                            " WHERE name = $1 AND holder = $2 AND epoch = $3::bigint"
                            " AND expires_at > clock_timestamp() RETURNING expires_at",
                            bs));
    db.prepare(
        "rel",
        subst(
            "UPDATE %S.leases SET holder = NULL, expires_at = LEAST(expires_at, clock_timestamp())"
            " WHERE name = $1 AND holder = $2 AND epoch = $3::bigint RETURNING true",
            bs));
}

} // namespace bench
