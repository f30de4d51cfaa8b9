/// @file pq_arrays.hpp
/// @brief PostgreSQL array literals ('{"a","b"}', '{1,2}') for the many-lease
/// statements, which pass each list as one text parameter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pglease::detail {

/// '{"a","b\"c"}' of items [begin, end) (a slice is not copied first):
/// every element double-quoted, '"' and '\' escaped.
[[nodiscard]] std::string text_array(const std::vector<std::string>& items, std::size_t begin,
                                     std::size_t end);
[[nodiscard]] inline std::string text_array(const std::vector<std::string>& items) {
    return text_array(items, 0, items.size());
}

/// '{1,2,3}' of items [begin, end).
[[nodiscard]] std::string bigint_array(const std::vector<std::int64_t>& items, std::size_t begin,
                                       std::size_t end);
[[nodiscard]] inline std::string bigint_array(const std::vector<std::int64_t>& items) {
    return bigint_array(items, 0, items.size());
}

} // namespace pglease::detail
