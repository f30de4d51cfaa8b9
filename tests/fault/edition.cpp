/// @file edition.cpp
/// @brief Installing pg_lease in the run's edition (edition.hpp).
#include "edition.hpp"

#include "common.hpp"
#include "phase.hpp"

#include <pqxx/pqxx>

#include <stdexcept>

namespace fault {
namespace {

std::string superuser_conninfo(const cluster& c, const std::string& db) {
    return "host=127.0.0.1 port=" + std::to_string(c.port()) + " user=postgres dbname=" + db +
           " connect_timeout=5";
}

/// psql -f of the SQL edition's script into @p db, as owner_role().
void psql_install(const cluster& c, const std::string& db) {
    const std::string log = c.dir() + "/install_" + db + ".log";
    const int rc = run_command({pg_bin() + "/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h",
                                "127.0.0.1", "-p", std::to_string(c.port()), "-U", owner_role(),
                                "-d", db, "-f", sql_edition_script()},
                               false, {}, log, 120);
    if (rc != 0)
        throw std::runtime_error("psql -f " + sql_edition_script() + " as " + owner_role() +
                                 " into " + db + " failed (status " + std::to_string(rc) +
                                 "), see " + log);
    check_sql_edition(c, db);
}

} // namespace

void install_edition(const cluster& c) {
    if (!sql_edition()) {
        const auto conn = patient_connection(c.conninfo());
        pqxx::nontransaction tx{*conn};
        tx.exec("CREATE EXTENSION pg_lease");
        return;
    }
    {
        const auto conn = patient_connection(superuser_conninfo(c, "postgres"));
        pqxx::nontransaction tx{*conn};
        tx.exec(std::string{"CREATE ROLE "} + owner_role() + " LOGIN CREATEROLE CREATEDB");
        // What the edition needs to end another role's stalled writers (docs/sql.md).
        tx.exec(std::string{"GRANT pg_signal_backend TO "} + owner_role());
    }
    {
        // The owner does the rest, as on a managed service.
        const auto conn = patient_connection(c.owner_conninfo("postgres"));
        pqxx::nontransaction tx{*conn};
        tx.exec(std::string{"CREATE ROLE "} + app_user() + " LOGIN");
        tx.exec(std::string{"CREATE DATABASE "} + app_db());
    }
    psql_install(c, app_db());
}

void install_edition_in_new_db(const cluster& c, const std::string& db) {
    {
        const auto conn = patient_connection(c.owner_conninfo("postgres"));
        pqxx::nontransaction tx{*conn};
        tx.exec("CREATE DATABASE " + db);
    }
    if (sql_edition()) {
        psql_install(c, db);
        return;
    }
    const auto conn = patient_connection(c.owner_conninfo(db));
    pqxx::nontransaction tx{*conn};
    tx.exec("CREATE EXTENSION pg_lease");
}

void check_sql_edition(const cluster& c, const std::string& db) {
    const auto conn = patient_connection(superuser_conninfo(c, db));
    pqxx::read_transaction tx{*conn};
    const auto r = tx.exec_params1(
        "SELECT (SELECT count(*) FROM pg_extension WHERE extname = 'pg_lease'), "
        "current_setting('shared_preload_libraries') LIKE '%pg_lease%', "
        "(SELECT count(*) FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang "
        " WHERE l.lanname = 'c' AND (p.probin LIKE '%pg_lease%' "
        "   OR p.pronamespace = 'public'::regnamespace)), "
        "(SELECT count(*) FROM pg_roles WHERE rolname IN ($1, $2) AND rolsuper), "
        "(SELECT pg_get_userbyid(p.proowner) FROM pg_proc p "
        " WHERE p.proname = 'lease_acquire' AND p.pronamespace = 'public'::regnamespace LIMIT 1), "
        "(SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'pg_lease%')",
        std::string{owner_role()}, std::string{app_user()});
    const bool ok = r[0].as<long>() == 0 && !r[1].as<bool>() && r[2].as<long>() == 0 &&
                    r[3].as<long>() == 0 && !r[4].is_null() &&
                    r[4].as<std::string>() == owner_role() && r[5].as<long>() == 0;
    if (!ok)
        throw std::runtime_error(
            "database " + db + " is not the SQL edition without a module: extension pg_lease " +
            r[0].c_str() + ", preloaded " + r[1].c_str() + ", C functions " + r[2].c_str() +
            ", superusers among the roles " + r[3].c_str() + ", lease_acquire owned by " +
            (r[4].is_null() ? "nobody" : r[4].c_str()) + ", pg_lease workers " + r[5].c_str());
}

void grant_to_app(pqxx::transaction_base& tx, const std::vector<std::string>& tables,
                  const std::vector<std::string>& sequences,
                  const std::vector<std::string>& functions) {
    if (!sql_edition())
        return;
    for (const auto& t : tables)
        tx.exec("GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON " + t + " TO " + app_user());
    for (const auto& q : sequences)
        tx.exec("GRANT USAGE ON SEQUENCE " + q + " TO " + app_user());
    for (const auto& f : functions)
        tx.exec("GRANT EXECUTE ON FUNCTION " + f + " TO " + app_user());
}

void set_takeover_timeout(pqxx::transaction_base& tx, const std::string& db,
                          const std::string& value) {
    if (sql_edition())
        tx.exec_params("INSERT INTO lease_sql_settings VALUES ('pg_lease.takeover_timeout', $1)",
                       value);
    else
        tx.exec("ALTER DATABASE " + db + " SET pg_lease.takeover_timeout = " + tx.quote(value));
}

} // namespace fault
