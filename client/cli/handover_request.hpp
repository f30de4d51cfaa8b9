/// @file handover_request.hpp
/// @brief The request of `pglease run --take-over`: a NOTIFY on its own
/// channel asking the current holder to hand its lease over.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pglease::cli {

/// The channel of take-over requests. Not `pg_lease`: that one carries the
/// extension's lease events, which followers parse.
inline constexpr const char* handover_channel = "pg_lease_handover";

/// {"lease":"jobs","requester":"host:pid:random"}: please hand lease
/// `jobs` to identity `requester` (the requesting `pglease run`).
struct handover_request {
    std::string lease;
    std::string requester;
};

/// The payload for @p r (compact JSON).
[[nodiscard]] std::string handover_payload(const handover_request& r);

/// Parses a payload: nullopt unless a JSON object with string "lease" and
/// "requester" of 1..255 bytes each. Never throws. Who sent it is checked
/// elsewhere (the notification's backend pid), not here.
[[nodiscard]] std::optional<handover_request>
parse_handover_request(std::string_view payload) noexcept;

} // namespace pglease::cli
