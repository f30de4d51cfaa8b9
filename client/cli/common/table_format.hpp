/// @file table_format.hpp
/// @brief The aligned text tables of `pglease status`.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace pglease::cli {

/// One line per row of @p cells, each column padded to its widest cell,
/// columns two spaces apart (no padding after the last).
template <std::size_t N>
std::string aligned(const std::vector<std::array<std::string, N>>& cells) {
    std::array<std::size_t, N> width{};
    for (const auto& c : cells)
        for (std::size_t i = 0; i < N; ++i)
            width[i] = std::max(width[i], c[i].size());
    std::string out;
    for (const auto& c : cells) {
        for (std::size_t i = 0; i < N; ++i) {
            out += c[i];
            if (i + 1 < N)
                out.append(width[i] - c[i].size() + 2, ' ');
        }
        out += '\n';
    }
    return out;
}

} // namespace pglease::cli
