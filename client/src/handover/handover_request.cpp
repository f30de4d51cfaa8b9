/// @file handover_request.cpp
/// @brief Handover request payloads.
#include "pglease/internal/handover_request.hpp"

#include <nlohmann/json.hpp>

namespace pglease {
namespace {

bool one_to_255(const nlohmann::json& j, const char* key, std::string& out) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string())
        return false;
    out = it->get<std::string>();
    return !out.empty() && out.size() <= 255;
}

} // namespace

std::string handover_payload(const handover_request& r) {
    return nlohmann::json{{"lease", r.lease}, {"requester", r.requester}}.dump();
}

std::optional<handover_request> parse_handover_request(std::string_view payload) noexcept {
    try {
        const auto j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
        handover_request r;
        if (!j.is_object() || !one_to_255(j, "lease", r.lease) ||
            !one_to_255(j, "requester", r.requester))
            return std::nullopt;
        return r;
    } catch (const std::exception&) {
        return std::nullopt; // e.g. std::bad_alloc
    }
}

} // namespace pglease
