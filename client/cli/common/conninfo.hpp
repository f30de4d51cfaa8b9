/// @file conninfo.hpp
/// @brief The connection string of the command, from -d and -h/-p/-U, as
/// psql builds it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pglease::cli {

/// What the user gave on the command line (empty: not given).
struct connection_args {
    std::string dbname;   ///< -d: a database name, a key=value conninfo, or a postgres:// URI
    std::string host;     ///< -h
    std::string port;     ///< -p
    std::string username; ///< -U
};

/// True when @p dbname is a connection string rather than a database name,
/// by libpq's own rule: it contains '=' or starts with "postgresql://" or
/// "postgres://".
[[nodiscard]] bool is_conninfo(std::string_view dbname) noexcept;

/// Quotes @p value for a key=value connection string ('...' with \ escapes).
[[nodiscard]] std::string quote_conninfo_value(std::string_view value);

/// One key=value connection string for libpq: -d parsed by libpq (a name
/// becomes dbname=...), then -h, -p, -U override what it set. Everything
/// left unset comes from the PG* environment variables when libpq connects.
/// An empty result means "environment only". Returns nullopt and sets
/// @p error (libpq's message) when -d is not a valid connection string.
[[nodiscard]] std::optional<std::string> build_conninfo(const connection_args& args,
                                                        std::string& error);

} // namespace pglease::cli
