// libFuzzer target: `pglease` durations ("500ms", "1h30m", "1.5s").
// Invariants: never throws; a parsed duration is within [0, max_duration]
// and formatting it and parsing again gives it back.
#include "common/duration.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto d = pglease::cli::parse_duration(text);
    if (!d)
        return 0;
    if (d->count() < 0 || *d > pglease::cli::max_duration)
        std::abort();
    if (pglease::cli::parse_duration(pglease::cli::format_duration(*d)) != d)
        std::abort();
    return 0;
}
