/// @file fence_token.hpp
/// @brief What a fenced transaction carries: the lease and its epoch.
#pragma once

#include <cstdint>
#include <string>

namespace pglease {

/// What a fenced transaction carries: the lease and the epoch of the grant.
struct fence_token {
    std::string lease_name;
    std::int64_t epoch = 0;
    /// Schema of the pg_lease functions; empty = search_path.
    std::string schema;
};

} // namespace pglease
