/// @file checks.cpp
/// @brief No two holders of a shard at once: grants in turn, writes in
/// epoch order, each epoch's writes by its grantee only.
#include "checks.hpp"

#include <map>

namespace pglease::group_fault {

std::vector<std::string> check_history(pqxx::connection& conn, const std::string& shard_prefix,
                                       long& grants, long& writes) {
    std::vector<std::string> bad;
    pqxx::nontransaction tx{conn};
    // 1. Grants: per shard, a new grant only after a release, or as the
    //    takeover of an expired grant; epochs grow.
    std::map<std::string, std::int64_t> open;
    std::map<std::string, std::int64_t> last;
    std::map<std::int64_t, std::string> grantee;
    grants = 0;
    for (const auto& row :
         tx.exec_params("SELECT name, event, coalesce(holder, ''), epoch FROM lease_events "
                        "WHERE starts_with(name, $1) ORDER BY id",
                        shard_prefix)) {
        const auto name = row[0].as<std::string>();
        const auto event = row[1].as<std::string>();
        const auto epoch = row[3].as<std::int64_t>();
        if (event == "acquired" || event == "takeover") {
            ++grants;
            if (open.count(name) > 0 && event != "takeover")
                bad.push_back(name + ": epoch " + std::to_string(epoch) + " granted while epoch " +
                              std::to_string(open[name]) + " was held");
            if (last.count(name) > 0 && epoch <= last[name])
                bad.push_back(name + ": epoch went back");
            open[name] = epoch;
            last[name] = epoch;
            grantee[epoch] = row[2].as<std::string>();
        } else if (event == "released" || event == "revoked") {
            open.erase(name);
        }
    }
    // 2. Writes: in id order per shard (a fenced write commits before the
    //    next grant, so ids follow grants), epochs never go back; an
    //    epoch's writes come from its grantee only.
    std::map<int, std::int64_t> newest;
    writes = 0;
    for (const auto& row :
         tx.exec("SELECT shard, epoch, member FROM gf_writes ORDER BY shard, id")) {
        ++writes;
        const int shard = row[0].as<int>();
        const auto epoch = row[1].as<std::int64_t>();
        const auto member = row[2].as<std::string>();
        if (newest.count(shard) > 0 && epoch < newest[shard])
            bad.push_back("shard " + std::to_string(shard) + ": a write of epoch " +
                          std::to_string(epoch) + " after one of epoch " +
                          std::to_string(newest[shard]));
        newest[shard] = std::max(newest[shard], epoch);
        const auto g = grantee.find(epoch);
        if (g == grantee.end() || g->second != member)
            bad.push_back("shard " + std::to_string(shard) + ": epoch " + std::to_string(epoch) +
                          " written by " + member + ", granted to " +
                          (g == grantee.end() ? std::string{"nobody"} : g->second));
    }
    return bad;
}

} // namespace pglease::group_fault
