/// @file event_payload.hpp
/// @brief Internal: reading NOTIFY pg_lease payloads.
#pragma once

#include <string>

namespace pglease::detail {

/// The lease a NOTIFY pg_lease payload is about: its "name" member, or "*"
/// (every waiter wakes) when the payload is not the JSON object the
/// extension sends. Never throws on bad input; fuzzed in tests/fuzz.
[[nodiscard]] std::string notified_lease_name(const std::string& payload);

} // namespace pglease::detail
