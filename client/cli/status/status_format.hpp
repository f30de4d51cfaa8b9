/// @file status_format.hpp
/// @brief What `pglease status` prints: a table for people, JSON for programs.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pglease::cli {

/// One row of the lease_status view.
struct status_row {
    std::string name;
    std::optional<std::string> holder; ///< nullopt when free
    std::int64_t epoch = 0;
    bool valid = false;                     ///< held and unexpired by the server's clock
    std::chrono::milliseconds remaining{0}; ///< 0 unless valid
    std::chrono::milliseconds ttl{0};
    std::int64_t transitions = 0;
    std::string acquired_at; ///< ISO 8601 (UTC) as the server formats it; may be empty
    std::string renewed_at;
    std::string expires_at;
    /// Backends holding the grant's fence lock (open fenced transactions);
    /// nullopt when the server's pg_lease is older than 1.3.
    std::optional<std::int64_t> writers;
};

/// "held" (valid), "expired" (a holder, but past expires_at), "free".
[[nodiscard]] const char* status_state(const status_row& row) noexcept;

/// An aligned table with a header line: NAME HOLDER EPOCH STATE WRITERS
/// REMAINING TTL TRANSITIONS EXPIRES_AT. "(no leases)" when @p rows is empty.
[[nodiscard]] std::string format_status_table(const std::vector<status_row>& rows);

/// One JSON object: {"name","holder"|null,"epoch","valid","state",
/// "remaining_ms","ttl_ms","transitions","acquired_at","renewed_at","expires_at",
/// "writers"|null}.
[[nodiscard]] std::string status_json(const status_row& row);

/// A JSON array of status_json objects.
[[nodiscard]] std::string status_json_array(const std::vector<status_row>& rows);

} // namespace pglease::cli
