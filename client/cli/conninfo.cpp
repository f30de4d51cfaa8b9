/// @file conninfo.cpp
/// @brief -d/-h/-p/-U to one connection string, with libpq's own parser.
#include "conninfo.hpp"

#include <libpq-fe.h>

#include <map>
#include <memory>

namespace pglease::cli {

bool is_conninfo(std::string_view dbname) noexcept {
    return dbname.find('=') != std::string_view::npos || dbname.substr(0, 13) == "postgresql://" ||
           dbname.substr(0, 11) == "postgres://";
}

std::string quote_conninfo_value(std::string_view value) {
    std::string out{"'"};
    for (const char c : value) {
        if (c == '\'' || c == '\\')
            out += '\\';
        out += c;
    }
    out += '\'';
    return out;
}

std::optional<std::string> build_conninfo(const connection_args& args, std::string& error) {
    std::map<std::string, std::string> settings;
    if (is_conninfo(args.dbname)) {
        char* message = nullptr;
        const std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> parsed{
            PQconninfoParse(args.dbname.c_str(), &message), &PQconninfoFree};
        if (!parsed) {
            error = message != nullptr ? message : "out of memory";
            PQfreemem(message);
            while (!error.empty() && (error.back() == '\n' || error.back() == ' '))
                error.pop_back();
            return std::nullopt;
        }
        for (const PQconninfoOption* o = parsed.get(); o->keyword != nullptr; ++o)
            if (o->val != nullptr)
                settings[o->keyword] = o->val;
    } else if (!args.dbname.empty()) {
        settings["dbname"] = args.dbname;
    }
    if (!args.host.empty())
        settings["host"] = args.host;
    if (!args.port.empty())
        settings["port"] = args.port;
    if (!args.username.empty())
        settings["user"] = args.username;

    std::string out;
    for (const auto& [key, value] : settings) {
        if (!out.empty())
            out += ' ';
        out += key + '=' + quote_conninfo_value(value);
    }
    return out;
}

} // namespace pglease::cli
