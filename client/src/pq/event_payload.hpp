/// @file event_payload.hpp
/// @brief Internal: reading NOTIFY pg_lease payloads.
#pragma once

#include <string>

namespace pglease::detail {

/// What a waiter needs of one NOTIFY pg_lease payload.
struct notified_event {
    /// The payload's "name" member, or "*" (every waiter wakes) when the
    /// payload is not the JSON object the extension sends.
    std::string name;
    /// True when the lease is free now ("released", "revoked"), or when the
    /// payload cannot be read (a waiter had better look).
    bool freed = true;
    /// The holder a "handover" event names (its successor); empty for the
    /// other events.
    std::string handed_to;
};

/// Reads @p payload. Never throws on bad input; fuzzed in tests/fuzz.
[[nodiscard]] notified_event read_notified_event(const std::string& payload);

/// read_notified_event(payload).name.
[[nodiscard]] std::string notified_lease_name(const std::string& payload);

} // namespace pglease::detail
