/// @file installation.hpp
/// @brief Which edition of pg_lease a database has, where, and on which
/// PostgreSQL (SPEC "PostgreSQL majors and the SQL edition").
#pragma once

#include <optional>
#include <string>

namespace pglease {

/// What pq_backend::installation() read from the server. The client works
/// the same against either edition (they share the SQL contract); this is
/// for operators and for code that reports what it runs on.
struct installation {
    /// "pg_lease" (the C edition) or "pg_lease_sql" (the SQL edition).
    std::string edition;
    /// The SQL API's version, e.g. "1.5".
    std::string version;
    /// The schema that holds it.
    std::string schema;
    /// Installed with CREATE EXTENSION (else the SQL edition by psql -f).
    bool extension = false;
    /// The C edition's library is in shared_preload_libraries (the kept-row
    /// cache, the shared notify queue and the counters need it); nullopt
    /// when the role may not read that setting (no superuser nor
    /// pg_read_all_settings). Always false for the SQL edition.
    std::optional<bool> preloaded;
    /// The server's version: "15.10", and as a number, 150010.
    std::string server_version;
    int server_version_num = 0;

    [[nodiscard]] bool sql_edition() const noexcept { return edition == "pg_lease_sql"; }
};

} // namespace pglease
