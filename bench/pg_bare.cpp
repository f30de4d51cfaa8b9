/// @file pg_bare.cpp
/// @brief The bare UPDATE reference of the lease figures.
#include "pg_bare.hpp"

namespace bench {

namespace {

/// Same columns, constraints and fillfactor as the extension's table.
const char* bare_table_sql = R"(
CREATE TABLE %S.leases (
    name        text PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 255),
    holder      text CHECK (octet_length(holder) BETWEEN 1 AND 255),
    epoch       bigint NOT NULL CHECK (epoch > 0),
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    ttl         interval NOT NULL,
    transitions bigint NOT NULL DEFAULT 0,
    owner_role  name NOT NULL
) WITH (fillfactor = 50);
CREATE SEQUENCE %S.epoch_seq AS bigint MINVALUE 1;
)";

} // namespace

std::string subst(std::string sql, const std::string& schema) {
    for (std::size_t at = sql.find("%S"); at != std::string::npos; at = sql.find("%S", at))
        sql.replace(at, 2, schema);
    return sql;
}

void create_bare_leases(pg_session& db, const std::string& schema) {
    db.exec(subst(bare_table_sql, schema));
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
