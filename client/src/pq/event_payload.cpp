/// @file event_payload.cpp
/// @brief Internal: reading NOTIFY pg_lease payloads.
#include "pq/event_payload.hpp"

#include <nlohmann/json.hpp>

namespace pglease::detail {

notified_event read_notified_event(const std::string& payload) {
    const auto event = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
    if (!event.is_object())
        return {"*", true, {}};
    const auto name = event.find("name");
    if (name == event.end() || !name->is_string())
        return {"*", true, {}};
    const auto kind = event.find("event");
    const bool freed =
        kind == event.end() || !kind->is_string() || *kind == "released" || *kind == "revoked";
    std::string handed_to;
    if (!freed && *kind == "handover") {
        const auto holder = event.find("holder");
        if (holder != event.end() && holder->is_string())
            handed_to = holder->get<std::string>();
    }
    return {name->get<std::string>(), freed, std::move(handed_to)};
}

std::string notified_lease_name(const std::string& payload) {
    return read_notified_event(payload).name;
}

} // namespace pglease::detail
