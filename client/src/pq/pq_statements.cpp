/// @file pq_statements.cpp
/// @brief The text and prepared name of each pq_backend statement.
#include "pq/pq_statements.hpp"

#include "pglease/internal/sql_name.hpp"

#include <cstdint>
#include <utility>

namespace pglease::detail {
namespace {

std::string name_for(const std::string& sql) {
    std::uint64_t hash = 14695981039346656037ULL;
    for (const char c : sql) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ULL;
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string name = "pglease_";
    for (int shift = 60; shift >= 0; shift -= 4)
        name += digits[(hash >> shift) & 0xf];
    return name;
}

/// The lease_status columns status and list select (see record_of()).
constexpr const char* status_columns =
    "SELECT name, coalesce(holder, ''), epoch, coalesce(valid, false), "
    "greatest(coalesce((date_part('epoch', remaining) * 1000000)::bigint, 0), 0) FROM ";

/// An acquire's reply: granted, epoch, holder, microseconds left.
constexpr const char* acquire_columns =
    "SELECT r.acquired, r.epoch, coalesce(r.holder, ''), "
    "(date_part('epoch', r.expires_at - clock_timestamp()) * 1000000)::bigint FROM ";

} // namespace

statement::statement(std::string text, use how_often)
    : sql{std::move(text)}
    , how{how_often}
    , name{name_for(sql)} {}

pq_statements::pq_statements(const std::string& schema)
    : acquire{acquire_columns + qualified_name(schema, "lease_acquire") +
              "($1, $2, $3::interval) AS r"}
    , acquire_delayed{acquire_columns + qualified_name(schema, "lease_acquire") +
                      "($1, $2, $3::interval, $4::interval) AS r"}
    , renew{"SELECT (date_part('epoch', " + qualified_name(schema, "lease_renew") +
            "($1, $2, $3, $4::interval) - clock_timestamp()) * 1000000)::bigint"}
    // A release need not wait for its WAL flush: lost in a crash, the lease
    // only waits for its ttl; the successor's grant, a durable commit,
    // flushes it first. One durable commit on a handover's path.
    , release{"SELECT " + qualified_name(schema, "lease_release") +
              "($1, $2, $3) FROM pg_catalog.set_config('synchronous_commit', 'off', true)"}
    , revoke{"SELECT " + qualified_name(schema, "lease_revoke") + "($1)"}
    , handover{"SELECT " + qualified_name(schema, "lease_handover") + "($1, $2, $3, $4)",
               statement::use::once}
    , status{status_columns + qualified_name(schema, "lease_status") + " WHERE name = $1"}
    , status_if_durable{status_columns + qualified_name(schema, "lease_status") +
                            " WHERE name = $1 AND "
                            "pg_catalog.current_setting('synchronous_standby_names') = ''",
                        statement::use::once}
    , list{status_columns + qualified_name(schema, "lease_status") +
           " WHERE starts_with(name, $1) ORDER BY name"}
    // Both arrays travel as one parameter each, in array literal syntax.
    , renew_many{"SELECT (date_part('epoch', r.expires_at - clock_timestamp()) * 1000000)::bigint "
                 "FROM " +
                 qualified_name(schema, "lease_renew_many") +
                 "($1::text[], $2, $3::bigint[], $4::interval) AS r"}
    // One statement: one round trip and one commit for every grant; rows
    // are locked in the order of the names (WITH ORDINALITY keeps it).
    , acquire_many{acquire_columns +
                   std::string{"unnest($1::text[]) WITH ORDINALITY AS t(n, i), "
                               "LATERAL "} +
                   qualified_name(schema, "lease_acquire") +
                   "(t.n, $2, $3::interval) AS r ORDER BY t.i"}
    , acquire_many_delayed{acquire_columns +
                           std::string{"unnest($1::text[]) WITH ORDINALITY AS t(n, i), "
                                       "LATERAL "} +
                           qualified_name(schema, "lease_acquire") +
                           "(t.n, $2, $3::interval, $4::interval) AS r ORDER BY t.i"}
    , release_many{"SELECT " + qualified_name(schema, "lease_release") +
                   "(t.n, $2, t.e) FROM unnest($1::text[], $3::bigint[]) "
                   "WITH ORDINALITY AS t(n, e, i) ORDER BY t.i"}
    , store_id{"SELECT " + qualified_name(schema, "lease_store_id") + "()"}
    , raise_call{"SELECT " + qualified_name(schema, "lease_raise")} {}

} // namespace pglease::detail
