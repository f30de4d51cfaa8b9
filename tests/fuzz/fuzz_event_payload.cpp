// libFuzzer target: the client's reading of NOTIFY pg_lease payloads.
// Invariant: any payload yields a name or "*", never an exception or crash.
#include "event_payload.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string payload(reinterpret_cast<const char*>(data), size);
    const std::string name = pglease::detail::notified_lease_name(payload);
    if (name.empty() && payload.find("\"name\"") == std::string::npos)
        std::abort(); // an empty name can only come from an explicit "name": ""
    return 0;
}
