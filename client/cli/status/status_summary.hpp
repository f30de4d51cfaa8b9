/// @file status_summary.hpp
/// @brief What `pglease status --summary` prints: counts of leases by state
/// and by holder, for when the leases are too many to list.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pglease::cli {

/// The leases of one holder (the holder of the latest grant).
struct holder_summary {
    std::string holder;
    std::int64_t held = 0;    ///< valid now
    std::int64_t expired = 0; ///< its grant ran out (not released)
    /// Least time left of its valid leases; nullopt when none is valid.
    std::optional<std::chrono::milliseconds> min_remaining;
};

/// Every lease (or every lease of a prefix), counted by state.
struct status_summary {
    std::int64_t leases = 0;
    std::int64_t held = 0;
    std::int64_t expired = 0;
    std::int64_t free = 0;               ///< released, revoked, or never granted again
    std::vector<holder_summary> holders; ///< by holder name
};

/// Two aligned tables: "LEASES HELD EXPIRED FREE HOLDERS" with one line,
/// then "HOLDER HELD EXPIRED MIN_REMAINING" with a line per holder (none
/// when there are no holders).
[[nodiscard]] std::string format_summary_table(const status_summary& s);

/// {"leases","held","expired","free","holders":[{"holder","held","expired",
/// "min_remaining_ms"|null}]}.
[[nodiscard]] std::string summary_json(const status_summary& s);

} // namespace pglease::cli
