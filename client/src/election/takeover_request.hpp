/// @file takeover_request.hpp
/// @brief Internal: a take-over request (`pglease run --take-over`,
/// elector_config::take_over): a NOTIFY on its own channel asking the
/// current holder to hand its lease over.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pglease::detail {

/// The channel of take-over requests. Not `pg_lease`: that one carries the
/// extension's lease events, which followers parse.
inline constexpr const char* takeover_channel = "pg_lease_handover";

/// {"lease":"jobs","requester":"host:pid:random"}: please hand lease
/// `jobs` to identity `requester` (the requesting `pglease run` or elector).
struct takeover_request {
    std::string lease;
    std::string requester;
};

/// The payload for @p r (compact JSON).
[[nodiscard]] std::string takeover_payload(const takeover_request& r);

/// Parses a payload: nullopt unless a JSON object with string "lease" and
/// "requester" of 1..255 bytes each. Never throws. Who sent it is checked
/// elsewhere (the notification's backend pid), not here.
[[nodiscard]] std::optional<takeover_request>
parse_takeover_request(std::string_view payload) noexcept;

} // namespace pglease::detail
