/// @file http_endpoint.cpp
/// @brief Parsing `--http [HOST:]PORT`.
#include "common/http_endpoint.hpp"

#include <charconv>

namespace pglease::cli {

std::optional<http_endpoint> parse_http_endpoint(std::string_view text, std::string& error) {
    http_endpoint ep;
    std::string_view port = text;
    if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
        std::string_view host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
            host = host.substr(1, host.size() - 2);
        if (host.empty() || host.find_first_of(" []") != std::string_view::npos) {
            error = "bad host in --http '" + std::string{text} + "' (want [HOST:]PORT)";
            return std::nullopt;
        }
        ep.host = std::string{host};
    }
    int value = -1;
    const auto* end = port.data() + port.size();
    const auto [ptr, ec] = std::from_chars(port.data(), end, value);
    if (port.empty() || ec != std::errc{} || ptr != end || value < 0 || value > 65535) {
        error = "bad port in --http '" + std::string{text} + "' (want [HOST:]PORT, PORT 0..65535)";
        return std::nullopt;
    }
    ep.port = value;
    return ep;
}

} // namespace pglease::cli
