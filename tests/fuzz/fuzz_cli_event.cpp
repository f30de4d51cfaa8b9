// libFuzzer target: the payloads `pglease watch` reads (NOTIFY pg_lease).
// Invariants: never throws; an accepted event printed as JSON parses back
// to the same event.
#include "status/event.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view payload(reinterpret_cast<const char*>(data), size);
    const auto event = pglease::cli::parse_event(payload);
    if (!event)
        return 0;
    const auto again = pglease::cli::parse_event(pglease::cli::event_json_line(*event, ""));
    if (!again || again->event != event->event || again->name != event->name ||
        again->holder != event->holder || again->epoch != event->epoch ||
        again->expires_at != event->expires_at)
        std::abort();
    (void)pglease::cli::event_text_line(*event, "2026-01-01T00:00:00.000Z");
    return 0;
}
