/// @file conninfo.cpp
/// @brief Connection string assembly on top of libpq's own parser.
#include "conninfo.hpp"

#include "pglease/error.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <map>
#include <memory>

namespace pglease::detail {

std::string quote_conninfo_value(const std::string& value) {
    std::string out{"'"};
    for (const char c : value) {
        if (c == '\'' || c == '\\')
            out += '\\';
        out += c;
    }
    out += '\'';
    return out;
}

std::string build_conninfo(const connection_options& options) {
    char* message = nullptr;
    const std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> parsed{
        PQconninfoParse(options.conninfo.c_str(), &message), &PQconninfoFree};
    if (!parsed) {
        std::string why = message != nullptr ? message : "out of memory";
        PQfreemem(message);
        while (!why.empty() && why.back() == '\n')
            why.pop_back();
        throw config_error{"invalid connection string: " + why};
    }

    std::map<std::string, std::string> settings;
    for (const PQconninfoOption* o = parsed.get(); o->keyword != nullptr; ++o)
        if (o->val != nullptr)
            settings.emplace(o->keyword, o->val);

    const auto ms = std::max<long long>(options.call_timeout.count(), 1);
    const auto seconds = (ms + 999) / 1000;
    const auto half = std::max<long long>(seconds / 2, 1);
    // emplace() keeps whatever the caller's string already set.
    settings.emplace("connect_timeout", std::to_string(std::max<long long>(seconds, 2)));
    settings.emplace("keepalives", "1");
    settings.emplace("keepalives_idle", std::to_string(half));
    settings.emplace("keepalives_interval", std::to_string(half));
    settings.emplace("keepalives_count", "2");
    settings.emplace("tcp_user_timeout", std::to_string(ms));
    if (!options.application_name.empty())
        settings.emplace("application_name", options.application_name);

    std::string out;
    for (const auto& [key, value] : settings) {
        if (!out.empty())
            out += ' ';
        out += key + '=' + quote_conninfo_value(value);
    }
    return out;
}

} // namespace pglease::detail
