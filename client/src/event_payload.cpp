/// @file event_payload.cpp
/// @brief Internal: reading NOTIFY pg_lease payloads.
#include "event_payload.hpp"

#include <nlohmann/json.hpp>

namespace pglease::detail {

std::string notified_lease_name(const std::string& payload) {
    const auto event = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
    if (!event.is_object())
        return "*";
    const auto name = event.find("name");
    if (name == event.end() || !name->is_string())
        return "*";
    return name->get<std::string>();
}

} // namespace pglease::detail
