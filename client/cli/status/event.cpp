/// @file event.cpp
/// @brief NOTIFY payload parsing and the lines `pglease watch` prints.
#include "status/event.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>

namespace pglease::cli {
namespace {

/// A string or null/missing member; false when present with another type.
bool optional_string(const nlohmann::json& obj, const char* key, std::optional<std::string>& out) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null())
        return true;
    if (!it->is_string())
        return false;
    out = it->get<std::string>();
    return true;
}

} // namespace

std::optional<lease_event> parse_event(std::string_view payload) noexcept {
    try {
        const auto j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
        if (!j.is_object())
            return std::nullopt;
        const auto event = j.find("event");
        const auto name = j.find("name");
        const auto epoch = j.find("epoch");
        if (event == j.end() || !event->is_string() || name == j.end() || !name->is_string() ||
            epoch == j.end() || !epoch->is_number_integer())
            return std::nullopt;
        lease_event e;
        e.event = event->get<std::string>();
        e.name = name->get<std::string>();
        if (epoch->is_number_unsigned()) {
            const auto u = epoch->get<std::uint64_t>();
            if (u > static_cast<std::uint64_t>(INT64_MAX))
                return std::nullopt;
            e.epoch = static_cast<std::int64_t>(u);
        } else {
            e.epoch = epoch->get<std::int64_t>();
        }
        if (!optional_string(j, "holder", e.holder) ||
            !optional_string(j, "expires_at", e.expires_at))
            return std::nullopt;
        if (const auto pid = j.find("pid"); pid != j.end()) {
            if (!pid->is_number_integer())
                return std::nullopt;
            e.pid = pid->get<std::int64_t>();
        }
        return e;
    } catch (const std::exception&) {
        return std::nullopt; // e.g. std::bad_alloc
    }
}

std::string event_json_line(const lease_event& e, const std::string& received_at) {
    nlohmann::ordered_json j;
    j["event"] = e.event;
    j["name"] = e.name;
    j["holder"] = e.holder ? nlohmann::ordered_json(*e.holder) : nlohmann::ordered_json(nullptr);
    j["epoch"] = e.epoch;
    j["expires_at"] =
        e.expires_at ? nlohmann::ordered_json(*e.expires_at) : nlohmann::ordered_json(nullptr);
    if (e.pid)
        j["pid"] = *e.pid;
    if (!received_at.empty())
        j["received_at"] = received_at;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string event_text_line(const lease_event& e, const std::string& received_at) {
    std::string line;
    if (!received_at.empty())
        line += received_at + "  ";
    line += e.event;
    line.append(e.event.size() < 8 ? 8 - e.event.size() : 0, ' ');
    line += "  " + e.name + "  holder=" + (e.holder ? *e.holder : "-") +
            "  epoch=" + std::to_string(e.epoch);
    if (e.expires_at)
        line += "  expires_at=" + *e.expires_at;
    if (e.pid)
        line += "  pid=" + std::to_string(*e.pid);
    return line;
}

std::string utc_now_iso() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t secs = std::chrono::system_clock::to_time_t(now);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[40];
    const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[48];
    std::snprintf(out, sizeof out, "%.*s.%03dZ", static_cast<int>(n), buf, static_cast<int>(ms));
    return out;
}

} // namespace pglease::cli
