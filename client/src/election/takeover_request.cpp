/// @file takeover_request.cpp
/// @brief Take-over request payloads.
#include "election/takeover_request.hpp"

#include <nlohmann/json.hpp>

namespace pglease::detail {
namespace {

bool one_to_255(const nlohmann::json& j, const char* key, std::string& out) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string())
        return false;
    out = it->get<std::string>();
    return !out.empty() && out.size() <= 255;
}

} // namespace

std::string takeover_payload(const takeover_request& r) {
    return nlohmann::json{{"lease", r.lease}, {"requester", r.requester}}.dump();
}

std::optional<takeover_request> parse_takeover_request(std::string_view payload) noexcept {
    try {
        const auto j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
        takeover_request r;
        if (!j.is_object() || !one_to_255(j, "lease", r.lease) ||
            !one_to_255(j, "requester", r.requester))
            return std::nullopt;
        return r;
    } catch (const std::exception&) {
        return std::nullopt; // e.g. std::bad_alloc
    }
}

} // namespace pglease::detail
