/// @file duration.hpp
/// @brief Durations on the command line: "500ms", "15s", "2m", "1h30m", "1.5s".
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace pglease::cli {

/// The largest duration the command accepts: 366 days.
inline constexpr std::chrono::milliseconds max_duration{366LL * 24 * 3600 * 1000};

/// Parses a duration as Go's time.ParseDuration writes them, at millisecond
/// precision: one or more "<number><unit>" terms, number a decimal with an
/// optional fraction, unit one of ms, s, m, h, d. "500ms", "15s", "2m",
/// "1h30m", "1.5s", "0s". No sign, no spaces, no bare numbers. Fractions
/// below a millisecond are truncated.
///
/// Returns nullopt for anything else, or above max_duration. Never throws,
/// never reads outside @p text.
///
/// @code
///   parse_duration("1m30s");   // 90000 ms
///   parse_duration("15");      // nullopt: a unit is required
/// @endcode
[[nodiscard]] std::optional<std::chrono::milliseconds>
parse_duration(std::string_view text) noexcept;

/// Formats @p d for people: "0s", "250ms", "1.5s", "2m", "2m30s", "1h2m3s".
/// Negative durations get a leading '-'. parse_duration(format_duration(d))
/// gives d back for every 0 <= d <= max_duration.
[[nodiscard]] std::string format_duration(std::chrono::milliseconds d);

} // namespace pglease::cli
