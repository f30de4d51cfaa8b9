/// @file status_format.cpp
/// @brief `pglease status` output.
#include "status/status_format.hpp"

#include "common/duration.hpp"
#include "common/table_format.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

namespace pglease::cli {
namespace {

nlohmann::ordered_json to_json(const status_row& r) {
    nlohmann::ordered_json j;
    j["name"] = r.name;
    j["holder"] = r.holder ? nlohmann::ordered_json(*r.holder) : nlohmann::ordered_json(nullptr);
    j["epoch"] = r.epoch;
    j["valid"] = r.valid;
    j["state"] = status_state(r);
    j["remaining_ms"] = r.remaining.count();
    j["ttl_ms"] = r.ttl.count();
    j["transitions"] = r.transitions;
    const auto text_or_null = [](const std::string& s) {
        return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
    };
    j["acquired_at"] = text_or_null(r.acquired_at);
    j["renewed_at"] = text_or_null(r.renewed_at);
    j["expires_at"] = text_or_null(r.expires_at);
    j["writers"] = r.writers ? nlohmann::ordered_json(*r.writers) : nlohmann::ordered_json(nullptr);
    return j;
}

std::string dump(const nlohmann::ordered_json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace

const char* status_state(const status_row& row) noexcept {
    if (row.valid)
        return "held";
    return row.holder ? "expired" : "free";
}

std::string format_status_table(const std::vector<status_row>& rows) {
    if (rows.empty())
        return "(no leases)\n";
    using line = std::array<std::string, 9>;
    std::vector<line> cells;
    cells.push_back({"NAME", "HOLDER", "EPOCH", "STATE", "WRITERS", "REMAINING", "TTL",
                     "TRANSITIONS", "EXPIRES_AT"});
    for (const auto& r : rows)
        cells.push_back({r.name, r.holder.value_or("-"), std::to_string(r.epoch), status_state(r),
                         r.writers ? std::to_string(*r.writers) : "-",
                         r.valid ? format_duration(r.remaining) : "-", format_duration(r.ttl),
                         std::to_string(r.transitions), r.expires_at.empty() ? "-" : r.expires_at});
    return aligned<9>(cells);
}

std::string status_json(const status_row& row) {
    return dump(to_json(row));
}

std::string status_json_array(const std::vector<status_row>& rows) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const auto& r : rows)
        a.push_back(to_json(r));
    return dump(a);
}

} // namespace pglease::cli
