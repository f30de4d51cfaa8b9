/// @file cmd_group_status.cpp
/// @brief `pglease status --group GROUP [--json]`: the lease_group_members
/// and lease_group_shards views (extension 1.2) for one group.
#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "pglease/internal/pqxx_compat.hpp"
#include "status/grant_columns.hpp"
#include "status/group_format.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <iostream>

namespace pglease::cli {
namespace {

constexpr const char* iso = "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'";

std::string remaining_ms(const char* column) {
    return std::string{"greatest(coalesce((extract(epoch FROM "} + column +
           ") * 1000)::bigint, 0), 0)";
}

} // namespace

int cmd_group_status(const global_options& g, const std::string& group, bool json) {
    try {
        pqxx::connection conn{plain_conninfo(g)};
        pqxx::nontransaction tx{conn};
        pqxx_compat::exec0(tx, "SET TIME ZONE 'UTC'");
        std::vector<group_member_row> members;
        const std::string member_sql =
            "SELECT m.member, coalesce(m.weight, 1), coalesce(m.valid, false), s.holder IS NULL, "
            "m.shards, " +
            remaining_ms("m.remaining") + ", coalesce(to_char(m.expires_at, " + iso +
            "), '') FROM " + qualified(g, "lease_group_members") + " m JOIN " +
            qualified(g, "lease_status") + " s ON s.name = m.lease_name WHERE m.group_name = $1";
        for (const auto& row : pqxx_compat::exec_params(tx, member_sql, group)) {
            group_member_row m;
            m.member = row[0].as<std::string>();
            m.weight = row[1].as<int>();
            m.valid = row[2].as<bool>();
            m.released = row[3].as<bool>();
            m.shards = row[4].as<std::int64_t>();
            m.remaining = std::chrono::milliseconds{row[5].as<long long>()};
            m.expires_at = row[6].as<std::string>();
            members.push_back(std::move(m));
        }
        std::vector<group_shard_row> shards;
        const std::string shard_sql = "SELECT shard, holder, epoch, coalesce(valid, false), " +
                                      remaining_ms("remaining") +
                                      ", coalesce(to_char(expires_at, " + iso + "), '') FROM " +
                                      qualified(g, "lease_group_shards") + " WHERE group_name = $1";
        for (const auto& row : pqxx_compat::exec_params(tx, shard_sql, group)) {
            group_shard_row s;
            s.shard = row[0].as<std::string>();
            read_grant_columns(row, s);
            s.expires_at = row[5].as<std::string>();
            shards.push_back(std::move(s));
        }
        if (members.empty() && shards.empty()) {
            std::cerr << "pglease: error: no lease group named \"" << group << "\"" << std::endl;
            return exit_error;
        }
        std::sort(members.begin(), members.end(),
                  [](const auto& a, const auto& b) { return natural_less(a.member, b.member); });
        std::sort(shards.begin(), shards.end(),
                  [](const auto& a, const auto& b) { return natural_less(a.shard, b.shard); });
        if (json)
            std::cout << group_json(group, members, shards) << std::endl;
        else
            std::cout << format_group_table(group, members, shards) << std::flush;
        return exit_ok;
    } catch (const std::exception& e) {
        return report_error(e);
    }
}

} // namespace pglease::cli
