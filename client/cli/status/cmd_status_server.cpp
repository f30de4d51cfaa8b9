/// @file cmd_status_server.cpp
/// @brief `pglease status --server [--json]`: which edition of pg_lease the
/// database has (C or SQL), its version and schema, how it was installed,
/// and the PostgreSQL it runs on.
#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/over_backend.hpp"
#include "common/table_format.hpp"

#include <nlohmann/json.hpp>

#include <iostream>

namespace pglease::cli {
namespace {

/// "extension, preloaded", "extension, not preloaded", "extension" (not
/// known) or "psql -f".
std::string installed_as(const pglease::installation& i) {
    if (!i.extension)
        return "psql -f";
    if (!i.preloaded)
        return "extension"; // cannot tell: shared_preload_libraries not readable
    return *i.preloaded ? "extension, preloaded" : "extension, not preloaded";
}

} // namespace

int cmd_status_server(const global_options& g, bool json) {
    return over_backend(g, [&](pglease::pq_backend& db) {
        const pglease::installation i = db.installation();
        if (json) {
            nlohmann::ordered_json j;
            j["edition"] = i.edition;
            j["version"] = i.version;
            j["schema"] = i.schema;
            j["extension"] = i.extension;
            j["preloaded"] = i.preloaded ? nlohmann::ordered_json(*i.preloaded)
                                         : nlohmann::ordered_json(nullptr);
            j["server_version"] = i.server_version;
            j["server_version_num"] = i.server_version_num;
            std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                      << std::endl;
        } else {
            std::cout << aligned<5>(
                             {{"EDITION", "VERSION", "SCHEMA", "INSTALLED", "POSTGRESQL"},
                              {i.edition, i.version, i.schema, installed_as(i), i.server_version}})
                      << std::flush;
        }
        return exit_ok;
    });
}

} // namespace pglease::cli
