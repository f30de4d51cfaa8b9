/// @file common.cpp
/// @brief Connections, messages and error reports shared by the subcommands.
///
/// common/: what every subcommand uses: the command line (cli_parse,
/// options, and run_plan, the timings the command line's --ttl gives
/// `run`), durations, connection strings (the library's parser), `--http`
/// addresses, exit codes, connections and error reports.
#include "common/common.hpp"

#include "common/exit_codes.hpp"

#include <pglease/error.hpp>
#include <pqxx/except>

#include <iostream>

namespace pglease::cli {
namespace {

std::string conninfo_or_usage(const global_options& g) {
    std::string why;
    auto s = build_conninfo(g.conn, why);
    if (!s)
        throw usage_error{"invalid connection string in -d/--dbname: " + why};
    return *s;
}

/// libpq messages: "ERROR:  text\nDETAIL:  ...\n" -> "text\nDETAIL:  ...".
std::string tidy(std::string text) {
    for (const char* prefix : {"ERROR:  ", "FATAL:  "}) {
        const auto at = text.find(prefix);
        if (at != std::string::npos)
            text.erase(at, std::char_traits<char>::length(prefix));
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

void print_error(std::string message, const std::string& sqlstate) {
    message = tidy(std::move(message));
    if (!sqlstate.empty()) {
        const auto nl = message.find('\n');
        const std::string tag = " (SQLSTATE " + sqlstate + ")";
        if (nl == std::string::npos)
            message += tag;
        else
            message.insert(nl, tag);
    }
    std::cerr << "pglease: error: " << message << std::endl;
}

} // namespace

pglease::connection_options make_connection_options(const global_options& g,
                                                    std::chrono::milliseconds call_timeout) {
    pglease::connection_options o;
    o.conninfo = conninfo_or_usage(g);
    o.schema = g.schema;
    o.call_timeout = call_timeout;
    o.application_name = "pglease";
    return o;
}

std::string plain_conninfo(const global_options& g) {
    std::string s = conninfo_or_usage(g);
    if (!s.empty())
        s += ' ';
    return s + "fallback_application_name='pglease'";
}

std::string qualified(const global_options& g, const std::string& object) {
    if (g.schema.empty())
        return object;
    std::string q{'"'};
    for (const char c : g.schema) {
        if (c == '"')
            q += '"';
        q += c;
    }
    return q + "\"." + object;
}

void info(const global_options& g, const std::string& message) {
    if (!g.quiet)
        std::cerr << "pglease: " << message << std::endl;
}

int report_error(const std::exception& e) {
    if (dynamic_cast<const usage_error*>(&e) != nullptr) {
        std::cerr << "pglease: " << e.what() << "\nRun with --help for more information."
                  << std::endl;
        return exit_usage;
    }
    if (const auto* pe = dynamic_cast<const pglease::error*>(&e)) {
        print_error(pe->what(), pe->sqlstate());
    } else if (const auto* se = dynamic_cast<const pqxx::sql_error*>(&e)) {
        std::string state{se->sqlstate()};
        // libpqxx 6.4 throws insufficient_privilege without its SQLSTATE.
        if (state.empty() && dynamic_cast<const pqxx::insufficient_privilege*>(&e) != nullptr)
            state = "42501";
        print_error(se->what(), state);
    } else {
        print_error(e.what(), {});
    }
    return exit_error;
}

int report_error(const std::string& message) {
    print_error(message, {});
    return exit_error;
}

} // namespace pglease::cli
