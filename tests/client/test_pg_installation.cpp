/// @file test_pg_installation.cpp
/// @brief pq_backend::installation() against the real server: the edition
/// the run installed (PGLEASE_TEST_EDITION, set by sql_edition.sh; else the
/// C edition), its version, schema and the server's version, as the
/// catalogs say; a schema with no pg_lease is an error, and a marker
/// function planted in another schema of the search_path changes nothing.
#include "pg_fixture.hpp"
#include "pglease/error.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <cstdlib>
#include <regex>

namespace pglease::test {
namespace {

std::string expected_edition() {
    const char* e = std::getenv("PGLEASE_TEST_EDITION");
    return e != nullptr && *e != '\0' ? e : "pg_lease";
}

class pg_installation : public pg_test {
protected:
    std::string one(const std::string& sql) {
        pqxx::work tx{admin()};
        return pqxx_compat::exec1(tx, sql)[0].as<std::string>();
    }
};

TEST_F(pg_installation, names_the_edition_its_version_and_the_server) {
    pq_backend db{env_options()};
    const installation i = db.installation();
    EXPECT_EQ(i.edition, expected_edition());
    EXPECT_EQ(i.sql_edition(), expected_edition() == "pg_lease_sql");
    EXPECT_EQ(i.schema, one("SELECT relnamespace::regnamespace::text FROM pg_class "
                            "WHERE oid = 'lease_status'::regclass"));
    EXPECT_TRUE(std::regex_match(i.version, std::regex{R"(\d+\.\d+)"})) << i.version;
    // As the catalogs say: the extension's row, or the edition's marker.
    const std::string ext = one("SELECT coalesce((SELECT extversion FROM pg_extension WHERE "
                                "extname IN ('pg_lease', 'pg_lease_sql')), '')");
    EXPECT_EQ(i.extension, !ext.empty());
    EXPECT_EQ(i.version, ext.empty() ? one("SELECT lease_sql_version()") : ext);
    if (i.sql_edition()) {
        EXPECT_EQ(i.preloaded, std::optional<bool>{false});
    } else {
        EXPECT_TRUE(i.extension) << "the C edition is always an extension";
        // The harness's admin may read the setting when it is a superuser.
        if (one("SELECT rolsuper::text FROM pg_roles WHERE rolname = current_user") == "true") {
            ASSERT_TRUE(i.preloaded.has_value());
            EXPECT_EQ(*i.preloaded,
                      one("SHOW shared_preload_libraries").find("pg_lease") != std::string::npos);
        }
    }
    EXPECT_EQ(i.server_version, one("SHOW server_version"));
    EXPECT_EQ(i.server_version_num, std::stoi(one("SHOW server_version_num")));
}

TEST_F(pg_installation, a_schema_without_pg_lease_is_an_error) {
    const auto schema = unique_name("no_lease");
    {
        pqxx::work tx{admin()};
        pqxx_compat::exec0(tx, "CREATE SCHEMA " + tx.quote_name(schema));
        tx.commit();
    }
    connection_options o = env_options();
    o.schema = schema;
    pq_backend db{o};
    try {
        (void)db.installation();
        ADD_FAILURE() << "no error for a schema without pg_lease";
    } catch (const error& e) {
        EXPECT_EQ(e.sqlstate(), "42P01") << e.what();
        EXPECT_NE(std::string{e.what()}.find(schema), std::string::npos) << e.what();
    }
    pqxx::work tx{admin()};
    pqxx_compat::exec0(tx, "DROP SCHEMA " + tx.quote_name(schema));
    tx.commit();
}

TEST_F(pg_installation, a_marker_in_another_schema_changes_nothing) {
    // The SQL edition's marker function planted first on the search_path:
    // the edition is read from the schema of lease_status, not from there.
    const auto schema = unique_name("decoy");
    {
        pqxx::work tx{admin()};
        pqxx_compat::exec0(tx, "CREATE SCHEMA " + tx.quote_name(schema));
        pqxx_compat::exec0(
            tx, "CREATE FUNCTION " + tx.quote_name(schema) +
                    ".lease_sql_version() RETURNS text LANGUAGE sql AS $$SELECT '9.9'$$");
        tx.commit();
    }
    connection_options o = env_options();
    o.conninfo = "options='-c search_path=" + schema + ",public'";
    pq_backend db{o};
    const installation i = db.installation();
    EXPECT_EQ(i.edition, expected_edition());
    EXPECT_NE(i.version, "9.9");
    EXPECT_NE(i.schema, schema);
    pqxx::work tx{admin()};
    pqxx_compat::exec0(tx, "DROP SCHEMA " + tx.quote_name(schema) + " CASCADE");
    tx.commit();
}

} // namespace
} // namespace pglease::test
