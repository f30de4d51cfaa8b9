/// @file pq_installation.cpp
/// @brief pq_backend::installation(): which edition of pg_lease the server
/// has. The editions share one SQL contract, so nothing else in the client
/// asks; this is for reports (`pglease status --server`).
#include "pq/pq_session.hpp"

#include "pglease/internal/pqxx_compat.hpp"
#include "pglease/internal/sql_name.hpp"

namespace pglease {
namespace {

/// The schema of lease_status as the session resolves it (the one every
/// call uses), whether the SQL edition's marker function is there, the
/// extension that owns it if any, and the server. pg_catalog-qualified:
/// a search_path that puts another schema first changes nothing here.
/// shared_preload_libraries through pg_settings, which leaves out what the
/// role may not read (current_setting() would fail the call).
constexpr const char* describe_sql =
    "SELECT n.nspname, "
    "EXISTS (SELECT FROM pg_catalog.pg_proc p WHERE p.pronamespace = n.oid "
    "AND p.proname = 'lease_sql_version' AND p.pronargs = 0), "
    "e.extname, e.extversion, "
    "pg_catalog.current_setting('server_version'), "
    "pg_catalog.current_setting('server_version_num')::int, "
    "(SELECT s.setting OPERATOR(pg_catalog.~) '(^|[\\s,/])pg_lease(\\.so)?\\s*(,|$)' "
    "FROM pg_catalog.pg_settings s WHERE s.name = 'shared_preload_libraries') "
    "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "LEFT JOIN pg_catalog.pg_extension e ON e.extnamespace = n.oid "
    "AND e.extname IN ('pg_lease', 'pg_lease_sql') "
    "WHERE c.oid = pg_catalog.to_regclass($1)";

} // namespace

installation pq_backend::installation(clock::time_point deadline) {
    return call("installation", detail::bounded(deadline, m_options.call_timeout), [&] {
        pqxx::nontransaction& tx = m_session->calls();
        const pqxx::result r = pqxx_compat::exec_params(
            tx, describe_sql, qualified_name(m_options.schema, "lease_status"));
        if (r.empty())
            throw error{"pg_lease is not installed " + (m_options.schema.empty()
                                                            ? std::string{"on the search_path"}
                                                            : "in schema " + m_options.schema),
                        "42P01"};
        const pqxx::row row{r[0]};
        pglease::installation out;
        out.schema = row[0].as<std::string>();
        const bool sql = row[1].as<bool>();
        out.edition = sql ? "pg_lease_sql" : "pg_lease";
        out.extension = !row[2].is_null();
        out.server_version = row[4].as<std::string>();
        out.server_version_num = row[5].as<int>();
        if (sql)
            out.preloaded = false;
        else if (!row[6].is_null())
            out.preloaded = row[6].as<bool>();
        if (out.extension)
            out.version = row[3].as<std::string>();
        else if (sql)
            out.version =
                pqxx_compat::exec1(tx, "SELECT " + qualified_name(out.schema, "lease_sql_version") +
                                           "()")[0]
                    .as<std::string>();
        return out;
    });
}

} // namespace pglease
