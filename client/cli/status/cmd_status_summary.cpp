/// @file cmd_status_summary.cpp
/// @brief `pglease status --summary [--prefix P] [--json]`: counts by state
/// and holder, aggregated by the server (one short reply for 100,000 leases).
#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "pglease/internal/pqxx_compat.hpp"
#include "status/status_summary.hpp"

#include <pqxx/pqxx>

#include <iostream>

namespace pglease::cli {

int cmd_status_summary(const global_options& g, const std::string& prefix, bool json) {
    try {
        pqxx::connection conn{plain_conninfo(g)};
        pqxx::nontransaction tx{conn};
        // One row per holder (NULL: the free leases), from one snapshot.
        const std::string sql =
            "SELECT holder, count(*) FILTER (WHERE valid), "
            "count(*) FILTER (WHERE NOT valid AND holder IS NOT NULL), "
            "count(*) FILTER (WHERE holder IS NULL), "
            "(min(extract(epoch FROM remaining)) FILTER (WHERE valid) * 1000)::bigint FROM " +
            qualified(g, "lease_status") +
            " WHERE $1::text IS NULL OR starts_with(name, $1) "
            "GROUP BY holder ORDER BY holder NULLS FIRST";
        const pqxx::result r = prefix.empty() ? pqxx_compat::exec_params(tx, sql, nullptr)
                                              : pqxx_compat::exec_params(tx, sql, prefix);
        status_summary s;
        for (const auto& row : r) {
            const auto held = row[1].as<std::int64_t>();
            const auto expired = row[2].as<std::int64_t>();
            s.held += held;
            s.expired += expired;
            s.free += row[3].as<std::int64_t>();
            if (row[0].is_null())
                continue;
            holder_summary h;
            h.holder = row[0].as<std::string>();
            h.held = held;
            h.expired = expired;
            if (!row[4].is_null())
                h.min_remaining = std::chrono::milliseconds{row[4].as<long long>()};
            s.holders.push_back(std::move(h));
        }
        s.leases = s.held + s.expired + s.free;
        std::cout << (json ? summary_json(s) + "\n" : format_summary_table(s)) << std::flush;
        return exit_ok;
    } catch (const std::exception& e) {
        return report_error(e);
    }
}

} // namespace pglease::cli
