/// @file common.hpp
/// @brief What every subcommand shares: global options, connections, errors.
#pragma once

#include "common/options.hpp"

#include <pglease/connection_options.hpp>

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>

namespace pglease::cli {

/// A usage mistake found after parsing (exit code 2).
class usage_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The library's connection settings for @p g. Throws usage_error when -d is
/// not a valid connection string.
[[nodiscard]] pglease::connection_options
make_connection_options(const global_options& g, std::chrono::milliseconds call_timeout);

/// A connection string for a plain pqxx::connection (application_name
/// "pglease" unless the user set one). Throws usage_error like above.
[[nodiscard]] std::string plain_conninfo(const global_options& g);

/// @p object qualified with --schema (quoted), or bare.
[[nodiscard]] std::string qualified(const global_options& g, const std::string& object);

/// Prints "pglease: <message>" on stderr unless -q.
void info(const global_options& g, const std::string& message);

/// Prints "pglease: error: <message> (SQLSTATE xxxxx)" for @p e on stderr,
/// with the server's message, DETAIL and HINT when @p e came from the
/// server, and returns the exit code for it (1, or 2 for usage_error).
int report_error(const std::exception& e);

/// Prints "pglease: error: <message>" on stderr; returns exit_error.
int report_error(const std::string& message);

} // namespace pglease::cli
