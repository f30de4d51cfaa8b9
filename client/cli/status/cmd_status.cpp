/// @file cmd_status.cpp
/// @brief `pglease status [NAME | --prefix P] [--json]`: the lease_status view,
/// with the number of open fenced transactions of each grant (lease_writers).
///
/// status/: reading leases and printing them: `status` (one lease, a
/// prefix, a summary, a group) and `watch` (events as they happen), in
/// tables or JSON.
#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "pglease/internal/pqxx_compat.hpp"
#include "status/grant_columns.hpp"
#include "status/status_format.hpp"

#include <pqxx/pqxx>

#include <iostream>
#include <optional>

namespace pglease::cli {

int cmd_status(const global_options& g, const std::string& name, const std::string& prefix,
               bool json) {
    try {
        pqxx::connection conn{plain_conninfo(g)};
        pqxx::nontransaction tx{conn};
        pqxx_compat::exec0(tx, "SET TIME ZONE 'UTC'");
        // open fenced transactions per grant: lease_writers, from 1.3 on
        const std::string writers_view = qualified(g, "lease_writers");
        const bool has_writers =
            pqxx_compat::exec_params1(tx, "SELECT to_regclass($1) IS NOT NULL", writers_view)[0]
                .as<bool>();
        const std::string writers_sql = has_writers
                                            ? "(SELECT count(*) FROM " + writers_view +
                                                  " w WHERE w.epoch = s.epoch AND w.granted)"
                                            : "NULL::bigint";
        const std::string sql =
            "SELECT name, holder, epoch, coalesce(valid, false), "
            "greatest(coalesce((extract(epoch FROM remaining) * 1000)::bigint, 0), 0), "
            "coalesce((extract(epoch FROM ttl) * 1000)::bigint, 0), coalesce(transitions, 0), "
            "coalesce(to_char(acquired_at, 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), ''), "
            "coalesce(to_char(renewed_at, 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), ''), "
            "coalesce(to_char(expires_at, 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), ''), " +
            writers_sql + " FROM " + qualified(g, "lease_status") +
            " s WHERE ($1::text IS NULL OR name = $1) AND ($2::text IS NULL OR starts_with(name, "
            "$2))"
            " ORDER BY name";
        const auto or_null = [](const std::string& v) {
            return v.empty() ? std::optional<std::string>{} : std::optional<std::string>{v};
        };
        const pqxx::result r = pqxx_compat::exec_params(tx, sql, or_null(name), or_null(prefix));
        std::vector<status_row> rows;
        for (const auto& row : r) {
            status_row s;
            s.name = row[0].as<std::string>();
            read_grant_columns(row, s);
            s.ttl = std::chrono::milliseconds{row[5].as<long long>()};
            s.transitions = row[6].as<std::int64_t>();
            s.acquired_at = row[7].as<std::string>();
            s.renewed_at = row[8].as<std::string>();
            s.expires_at = row[9].as<std::string>();
            if (!row[10].is_null())
                s.writers = row[10].as<std::int64_t>();
            rows.push_back(std::move(s));
        }
        if (!name.empty() && rows.empty()) {
            std::cerr << "pglease: error: no lease named \"" << name << "\"" << std::endl;
            return exit_error;
        }
        if (json)
            std::cout << (name.empty() ? status_json_array(rows) : status_json(rows.front()))
                      << std::endl;
        else
            std::cout << format_status_table(rows) << std::flush;
        return exit_ok;
    } catch (const std::exception& e) {
        return report_error(e);
    }
}

} // namespace pglease::cli
