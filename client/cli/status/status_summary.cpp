/// @file status_summary.cpp
/// @brief `pglease status --summary` output.
#include "status/status_summary.hpp"

#include "common/duration.hpp"
#include "common/table_format.hpp"

#include <nlohmann/json.hpp>

#include <array>

namespace pglease::cli {
std::string format_summary_table(const status_summary& s) {
    std::string out =
        aligned<5>({{"LEASES", "HELD", "EXPIRED", "FREE", "HOLDERS"},
                    {std::to_string(s.leases), std::to_string(s.held), std::to_string(s.expired),
                     std::to_string(s.free), std::to_string(s.holders.size())}});
    if (s.holders.empty())
        return out;
    std::vector<std::array<std::string, 4>> rows{{"HOLDER", "HELD", "EXPIRED", "MIN_REMAINING"}};
    for (const auto& h : s.holders)
        rows.push_back({h.holder, std::to_string(h.held), std::to_string(h.expired),
                        h.min_remaining ? format_duration(*h.min_remaining) : "-"});
    return out + "\n" + aligned<4>(rows);
}

std::string summary_json(const status_summary& s) {
    nlohmann::ordered_json j;
    j["leases"] = s.leases;
    j["held"] = s.held;
    j["expired"] = s.expired;
    j["free"] = s.free;
    j["holders"] = nlohmann::ordered_json::array();
    for (const auto& h : s.holders) {
        nlohmann::ordered_json o;
        o["holder"] = h.holder;
        o["held"] = h.held;
        o["expired"] = h.expired;
        o["min_remaining_ms"] = h.min_remaining ? nlohmann::ordered_json(h.min_remaining->count())
                                                : nlohmann::ordered_json(nullptr);
        j["holders"].push_back(std::move(o));
    }
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace pglease::cli
