/// @file pq_arrays.hpp
/// @brief PostgreSQL array literals ('{"a","b"}', '{1,2}') for the many-lease
/// statements, which pass each list as one text parameter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pglease::detail {

/// '{"a","b\"c"}': every element double-quoted, '"' and '\' escaped.
[[nodiscard]] std::string text_array(const std::vector<std::string>& items);

/// '{1,2,3}'.
[[nodiscard]] std::string bigint_array(const std::vector<std::int64_t>& items);

} // namespace pglease::detail
