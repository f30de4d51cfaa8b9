/// @file fence_token.hpp
/// @brief What a lease gives a fenced transaction: the token it carries and
/// the time it may take. Here, not in fence.hpp, so that the lease (which
/// makes both) does not depend on the fence layer that runs them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace pglease {

/// What a fenced transaction carries: the lease and the epoch of the grant.
struct fence_token {
    std::string lease_name;
    std::int64_t epoch = 0;
    /// Schema of the pg_lease functions; empty = search_path.
    std::string schema;
};

/// How long the run_fenced() of a lease, scoped_lease or elector may go on
/// past the lease's local deadline before it is cut off (see run_fenced()).
inline constexpr std::chrono::milliseconds fenced_grace{1000};

namespace detail {
/// The time bound of one fenced transaction (steady clock).
struct fence_bound {
    /// When to cancel it; max() = never (no watchdog, no cost).
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    /// Asked when @p deadline comes: a later time point postpones the cut
    /// (the lease was renewed meanwhile). May be empty.
    std::function<std::chrono::steady_clock::time_point()> extend;
};
} // namespace detail

} // namespace pglease
