/// @file conninfo.hpp
/// @brief Internal: the libpq connection string pq_backend really uses.
#pragma once

#include "pglease/connection_options.hpp"

#include <string>

namespace pglease::detail {

/// Parses options.conninfo with libpq (key=value or URI), adds the timeout,
/// keepalive and application_name settings that the string leaves unset,
/// and returns one key=value string. Throws config_error when libpq cannot
/// parse the string. PG* environment variables still apply to every key
/// not in the result.
[[nodiscard]] std::string build_conninfo(const connection_options& options);

/// Quotes @p value for a key=value connection string.
[[nodiscard]] std::string quote_conninfo_value(const std::string& value);

} // namespace pglease::detail
