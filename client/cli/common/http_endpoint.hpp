/// @file http_endpoint.hpp
/// @brief `--http [HOST:]PORT`: where `pglease run` serves health and metrics.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pglease::cli {

/// An address to listen on; the host is loopback unless one is given.
struct http_endpoint {
    std::string host{"127.0.0.1"};
    int port = 0; ///< 0: any free port (printed at start)
};

/// Parses `PORT`, `HOST:PORT` or `[IPV6]:PORT`; std::nullopt with @p error
/// set when the text is not one of those or the port is not 0..65535.
/// Pure: no I/O, no name resolution.
[[nodiscard]] std::optional<http_endpoint> parse_http_endpoint(std::string_view text,
                                                               std::string& error);

} // namespace pglease::cli
