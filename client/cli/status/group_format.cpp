/// @file group_format.cpp
/// @brief `pglease status --group` output.
#include "status/group_format.hpp"

#include "common/duration.hpp"
#include "common/table_format.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>

namespace pglease::cli {
namespace {

const char* member_state(const group_member_row& m) noexcept {
    if (m.valid)
        return "live";
    return m.released ? "left" : "expired";
}

const char* shard_state(const group_shard_row& s) noexcept {
    if (s.valid)
        return "held";
    return s.holder ? "expired" : "free";
}

std::size_t held_count(const std::vector<group_shard_row>& shards) {
    return static_cast<std::size_t>(
        std::count_if(shards.begin(), shards.end(), [](const auto& s) { return s.valid; }));
}

} // namespace

bool natural_less(const std::string& a, const std::string& b) noexcept {
    std::size_t i = 0;
    std::size_t j = 0;
    const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    while (i < a.size() && j < b.size()) {
        if (digit(a[i]) && digit(b[j])) {
            std::size_t ie = i;
            std::size_t je = j;
            while (ie < a.size() && digit(a[ie]))
                ++ie;
            while (je < b.size() && digit(b[je]))
                ++je;
            // Skip leading zeros, then the longer run is the larger number.
            std::size_t is = i;
            std::size_t js = j;
            while (is + 1 < ie && a[is] == '0')
                ++is;
            while (js + 1 < je && b[js] == '0')
                ++js;
            if (ie - is != je - js)
                return ie - is < je - js;
            const int c = a.compare(is, ie - is, b, js, je - js);
            if (c != 0)
                return c < 0;
            i = ie;
            j = je;
            continue;
        }
        if (a[i] != b[j])
            return a[i] < b[j];
        ++i;
        ++j;
    }
    if (a.size() - i != b.size() - j)
        return a.size() - i < b.size() - j;
    return a < b;
}

std::string format_group_table(const std::string& group,
                               const std::vector<group_member_row>& members,
                               const std::vector<group_shard_row>& shards) {
    const auto live =
        std::count_if(members.begin(), members.end(), [](const auto& m) { return m.valid; });
    const std::size_t held = held_count(shards);
    std::string out = "group " + group + ": " + std::to_string(live) + " live member" +
                      (live == 1 ? "" : "s") + ", " + std::to_string(shards.size()) + " shard" +
                      (shards.size() == 1 ? "" : "s") + " (" + std::to_string(held) + " held, " +
                      std::to_string(shards.size() - held) + " free or expired)\n\n";
    std::vector<std::array<std::string, 5>> m{{"MEMBER", "WEIGHT", "STATE", "SHARDS", "REMAINING"}};
    for (const auto& r : members)
        m.push_back({r.member, std::to_string(r.weight), member_state(r), std::to_string(r.shards),
                     r.valid ? format_duration(r.remaining) : "-"});
    out += members.empty() ? "(no members)\n" : aligned(m);
    out += '\n';
    std::vector<std::array<std::string, 6>> s{
        {"SHARD", "HOLDER", "EPOCH", "STATE", "REMAINING", "EXPIRES_AT"}};
    for (const auto& r : shards)
        s.push_back({r.shard, r.holder.value_or("-"), std::to_string(r.epoch), shard_state(r),
                     r.valid ? format_duration(r.remaining) : "-",
                     r.expires_at.empty() ? "-" : r.expires_at});
    out += shards.empty() ? "(no shards)\n" : aligned(s);
    return out;
}

std::string group_json(const std::string& group, const std::vector<group_member_row>& members,
                       const std::vector<group_shard_row>& shards) {
    using json = nlohmann::ordered_json;
    const auto text_or_null = [](const std::string& t) {
        return t.empty() ? json(nullptr) : json(t);
    };
    json j;
    j["group"] = group;
    j["members"] = json::array();
    for (const auto& r : members) {
        json m;
        m["member"] = r.member;
        m["weight"] = r.weight;
        m["state"] = member_state(r);
        m["valid"] = r.valid;
        m["shards"] = r.shards;
        m["remaining_ms"] = r.remaining.count();
        m["expires_at"] = text_or_null(r.expires_at);
        j["members"].push_back(std::move(m));
    }
    j["shards"] = json::array();
    for (const auto& r : shards) {
        json s;
        s["shard"] = r.shard;
        s["holder"] = r.holder ? json(*r.holder) : json(nullptr);
        s["epoch"] = r.epoch;
        s["state"] = shard_state(r);
        s["valid"] = r.valid;
        s["remaining_ms"] = r.remaining.count();
        s["expires_at"] = text_or_null(r.expires_at);
        j["shards"].push_back(std::move(s));
    }
    const std::size_t held = held_count(shards);
    j["held"] = held;
    j["free"] = shards.size() - held;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace pglease::cli
