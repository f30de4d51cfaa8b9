/// @file conninfo_text.cpp
/// @brief libpq connection strings as key=value settings.
#include "pglease/internal/conninfo_text.hpp"

#include <libpq-fe.h>

#include <memory>

namespace pglease::conninfo_text {

std::optional<std::map<std::string, std::string>> parse(const std::string& conninfo,
                                                        std::string& error) {
    char* message = nullptr;
    const std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> parsed{
        PQconninfoParse(conninfo.c_str(), &message), &PQconninfoFree};
    if (!parsed) {
        error = message != nullptr ? message : "out of memory";
        PQfreemem(message);
        while (!error.empty() && (error.back() == '\n' || error.back() == ' '))
            error.pop_back();
        return std::nullopt;
    }
    std::map<std::string, std::string> settings;
    for (const PQconninfoOption* o = parsed.get(); o->keyword != nullptr; ++o)
        if (o->val != nullptr)
            settings.emplace(o->keyword, o->val);
    return settings;
}

std::string quote(std::string_view value) {
    std::string out{"'"};
    for (const char c : value) {
        if (c == '\'' || c == '\\')
            out += '\\';
        out += c;
    }
    out += '\'';
    return out;
}

std::string join(const std::map<std::string, std::string>& settings) {
    std::string out;
    for (const auto& [key, value] : settings) {
        if (!out.empty())
            out += ' ';
        out += key + '=' + quote(value);
    }
    return out;
}

} // namespace pglease::conninfo_text
