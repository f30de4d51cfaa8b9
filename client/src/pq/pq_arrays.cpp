/// @file pq_arrays.cpp
/// @brief Array literals for the many-lease statements.
#include "pq/pq_arrays.hpp"

namespace pglease::detail {

std::string text_array(const std::vector<std::string>& items, std::size_t begin, std::size_t end) {
    std::string out{'{'};
    for (std::size_t i = begin; i < end; ++i) {
        if (i > begin)
            out += ',';
        out += '"';
        for (const char c : items[i]) {
            if (c == '"' || c == '\\')
                out += '\\';
            out += c;
        }
        out += '"';
    }
    out += '}';
    return out;
}

std::string bigint_array(const std::vector<std::int64_t>& items, std::size_t begin,
                         std::size_t end) {
    std::string out{'{'};
    for (std::size_t i = begin; i < end; ++i) {
        if (i > begin)
            out += ',';
        out += std::to_string(items[i]);
    }
    out += '}';
    return out;
}

} // namespace pglease::detail
