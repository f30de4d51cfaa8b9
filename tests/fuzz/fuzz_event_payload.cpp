// libFuzzer target: the client's reading of NOTIFY pg_lease payloads.
// Invariant: any payload yields a name or "*" and a freed flag, never an
// exception or crash.
#include "pq/event_payload.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string payload(reinterpret_cast<const char*>(data), size);
    const auto event = pglease::detail::read_notified_event(payload);
    if (event.name.empty() && payload.find("\"name\"") == std::string::npos)
        std::abort(); // an empty name can only come from an explicit "name": ""
    if (!event.freed && payload.find("\"event\"") == std::string::npos)
        std::abort(); // "not free" only from an explicit event kind
    return 0;
}
