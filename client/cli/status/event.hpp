/// @file event.hpp
/// @brief The NOTIFY pg_lease payload that `pglease watch` prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pglease::cli {

/// One lease event as the extension sends it on channel pg_lease:
/// {"event":"acquired","name":"jobs","holder":"w1","epoch":42,"expires_at":"..."}.
struct lease_event {
    std::string event;                 ///< acquired, takeover, released, revoked, handover, evict
    std::string name;                  ///< the lease
    std::optional<std::string> holder; ///< null when the payload has none
    std::int64_t epoch = 0;            ///< the grant the event is about
    std::optional<std::string> expires_at; ///< ISO 8601, as the server wrote it
    std::optional<std::int64_t> pid;       ///< evict: the backend that was ended
};

/// Parses a payload. nullopt when it is not a JSON object with string
/// "event" and "name", an integer "epoch", "holder"/"expires_at" that are
/// strings or null (or missing), and "pid" an integer when present. Never
/// throws.
[[nodiscard]] std::optional<lease_event> parse_event(std::string_view payload) noexcept;

/// The payload again, as one line of compact JSON with the keys above (and
/// "received_at" when @p received_at is not empty).
[[nodiscard]] std::string event_json_line(const lease_event& e, const std::string& received_at);

/// One line for people:
/// "2026-11-21T09:00:15.104Z  acquired  jobs  holder=w1  epoch=42  expires_at=...".
[[nodiscard]] std::string event_text_line(const lease_event& e, const std::string& received_at);

/// The current wall-clock time as "YYYY-MM-DDTHH:MM:SS.mmmZ", for display
/// only (no decision in pglease reads the wall clock).
[[nodiscard]] std::string utc_now_iso();

} // namespace pglease::cli
