/// @file conninfo.cpp
/// @brief Connection string assembly on top of libpq's own parser.
#include "pq/conninfo.hpp"

#include "pglease/error.hpp"

#include "pglease/internal/conninfo_text.hpp"

#include <algorithm>

namespace pglease::detail {

std::string quote_conninfo_value(const std::string& value) {
    return conninfo_text::quote(value);
}

std::string build_conninfo(const connection_options& options) {
    std::string why;
    auto settings = conninfo_text::parse(options.conninfo, why);
    if (!settings)
        throw config_error{"invalid connection string: " + why};

    const auto ms = std::max<long long>(options.call_timeout.count(), 1);
    const auto seconds = (ms + 999) / 1000;
    const auto half = std::max<long long>(seconds / 2, 1);
    // emplace() keeps whatever the caller's string already set.
    settings->emplace("connect_timeout", std::to_string(std::max<long long>(seconds, 2)));
    settings->emplace("keepalives", "1");
    settings->emplace("keepalives_idle", std::to_string(half));
    settings->emplace("keepalives_interval", std::to_string(half));
    settings->emplace("keepalives_count", "2");
    settings->emplace("tcp_user_timeout", std::to_string(ms));
    if (!options.application_name.empty())
        settings->emplace("application_name", options.application_name);
    return conninfo_text::join(*settings);
}

} // namespace pglease::detail
