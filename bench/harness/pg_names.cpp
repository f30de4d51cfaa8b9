/// @file pg_names.cpp
/// @brief Schema names of the PostgreSQL sections.
#include "pg_names.hpp"

#include <stdexcept>

namespace bench {

std::string bench_schema(const settings& s, const char* what) {
    return std::string{"bench_"} + what + "_" + s.tag;
}

std::string extension_prefix(pg_session& db) {
    pg_result r = db.query("SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension "
                           "WHERE extname = 'pg_lease'");
    if (r.rows() != 1)
        throw std::runtime_error("the pg_lease extension is not installed in this database");
    return r.text(0, 0) + ".";
}

} // namespace bench
