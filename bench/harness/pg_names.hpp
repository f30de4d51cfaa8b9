/// @file pg_names.hpp
/// @brief Where the PostgreSQL sections put things: their own schema per
/// run, and the schema the extension lives in.
#pragma once

#include "harness.hpp"
#include "pg.hpp"

#include <string>

namespace bench {

/// "bench_<what>_<tag>": a section's schema for this run.
std::string bench_schema(const settings& s, const char* what);
/// The schema the extension lives in, quoted, with a dot.
std::string extension_prefix(pg_session& db);

} // namespace bench
