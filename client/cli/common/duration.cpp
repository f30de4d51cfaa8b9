/// @file duration.cpp
/// @brief Duration parsing and formatting for the command line.
#include "common/duration.hpp"

#include <cstdint>

namespace pglease::cli {
namespace {

/// Nanoseconds per unit, or 0 when @p unit is not a unit.
std::int64_t unit_nanos(std::string_view unit) noexcept {
    if (unit == "ms")
        return 1'000'000;
    if (unit == "s")
        return 1'000'000'000;
    if (unit == "m")
        return 60LL * 1'000'000'000;
    if (unit == "h")
        return 3600LL * 1'000'000'000;
    if (unit == "d")
        return 86400LL * 1'000'000'000;
    return 0;
}

bool is_digit(char c) noexcept {
    return c >= '0' && c <= '9';
}

bool is_unit_char(char c) noexcept {
    return c == 'm' || c == 's' || c == 'h' || c == 'd';
}

} // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) noexcept {
    // Every partial sum is kept below this, so nothing can overflow: the
    // limit in nanoseconds is ~3.2e16, far below INT64_MAX (~9.2e18).
    constexpr std::int64_t limit_ns = max_duration.count() * 1'000'000;
    if (text.empty())
        return std::nullopt;
    std::int64_t total_ns = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        // 1. The integer part (may be empty if a fraction follows: ".5s").
        std::int64_t whole = 0;
        std::size_t digits = 0;
        while (i < text.size() && is_digit(text[i])) {
            whole = whole * 10 + (text[i] - '0');
            if (whole > limit_ns)
                return std::nullopt;
            ++i;
            ++digits;
        }
        // 2. The fraction: at most 9 digits count (nanoseconds), more are read and dropped.
        std::int64_t frac = 0;
        std::int64_t frac_scale = 1;
        std::size_t frac_digits = 0;
        if (i < text.size() && text[i] == '.') {
            ++i;
            while (i < text.size() && is_digit(text[i])) {
                if (frac_scale < 1'000'000'000) {
                    frac = frac * 10 + (text[i] - '0');
                    frac_scale *= 10;
                }
                ++i;
                ++frac_digits;
            }
            if (frac_digits == 0)
                return std::nullopt;
        }
        if (digits == 0 && frac_digits == 0)
            return std::nullopt;
        // 3. The unit: the longest run of unit letters, which must be a unit.
        const std::size_t unit_start = i;
        while (i < text.size() && is_unit_char(text[i]))
            ++i;
        const std::int64_t per = unit_nanos(text.substr(unit_start, i - unit_start));
        if (per == 0)
            return std::nullopt;
        // 4. Add whole * per + frac * per / frac_scale, checking the limit first.
        if (whole > (limit_ns - total_ns) / per)
            return std::nullopt;
        total_ns += whole * per;
        // frac < frac_scale <= 1e9 and per <= 8.64e13: split to stay in range.
        const std::int64_t frac_ns =
            (per / frac_scale) * frac + (per % frac_scale) * frac / frac_scale;
        if (frac_ns > limit_ns - total_ns)
            return std::nullopt;
        total_ns += frac_ns;
    }
    return std::chrono::milliseconds{total_ns / 1'000'000};
}

std::string format_duration(std::chrono::milliseconds d) {
    std::int64_t ms = d.count();
    std::string out;
    if (ms < 0) {
        out += '-';
        ms = ms == INT64_MIN ? INT64_MAX : -ms;
    }
    if (ms == 0)
        return "0s";
    if (ms < 1000)
        return out + std::to_string(ms) + "ms";
    const std::int64_t days = ms / 86'400'000;
    const std::int64_t hours = ms / 3'600'000 % 24;
    const std::int64_t minutes = ms / 60'000 % 60;
    const std::int64_t seconds = ms / 1000 % 60;
    const std::int64_t millis = ms % 1000;
    if (days > 0)
        out += std::to_string(days) + "d";
    if (hours > 0)
        out += std::to_string(hours) + "h";
    if (minutes > 0)
        out += std::to_string(minutes) + "m";
    if (seconds > 0 || millis > 0) {
        out += std::to_string(seconds);
        if (millis > 0) {
            std::string frac = std::to_string(millis);
            frac.insert(0, 3 - frac.size(), '0');
            while (frac.back() == '0')
                frac.pop_back();
            out += '.' + frac;
        }
        out += 's';
    }
    return out;
}

} // namespace pglease::cli
