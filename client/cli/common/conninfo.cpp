/// @file conninfo.cpp
/// @brief -d/-h/-p/-U to one connection string, with libpq's own parser.
#include "common/conninfo.hpp"

#include "pglease/internal/conninfo_text.hpp"

#include <map>

namespace pglease::cli {

bool is_conninfo(std::string_view dbname) noexcept {
    return dbname.find('=') != std::string_view::npos || dbname.substr(0, 13) == "postgresql://" ||
           dbname.substr(0, 11) == "postgres://";
}

std::string quote_conninfo_value(std::string_view value) {
    return conninfo_text::quote(value);
}

std::optional<std::string> build_conninfo(const connection_args& args, std::string& error) {
    std::map<std::string, std::string> settings;
    if (is_conninfo(args.dbname)) {
        auto parsed = conninfo_text::parse(args.dbname, error);
        if (!parsed)
            return std::nullopt;
        settings = std::move(*parsed);
    } else if (!args.dbname.empty()) {
        settings["dbname"] = args.dbname;
    }
    if (!args.host.empty())
        settings["host"] = args.host;
    if (!args.port.empty())
        settings["port"] = args.port;
    if (!args.username.empty())
        settings["user"] = args.username;
    return conninfo_text::join(settings);
}

} // namespace pglease::cli
