/// @file over_backend.hpp
/// @brief The one-shot commands' session: a pq_backend of their own, its
/// errors reported as every command reports them.
#pragma once

#include "common/common.hpp"

#include <pglease/pq_backend.hpp>

#include <chrono>
#include <exception>

namespace pglease::cli {

/// The bound of each call of a one-shot command (acquire, renew, release,
/// revoke, status --server).
inline constexpr std::chrono::milliseconds one_shot_call_timeout{5000};

/// Runs @p call over a backend of its own: its exit code, or the error's.
template <typename Call>
int over_backend(const global_options& g, Call&& call) {
    try {
        pglease::pq_backend db{make_connection_options(g, one_shot_call_timeout)};
        return call(db);
    } catch (const std::exception& e) {
        return report_error(e);
    }
}

} // namespace pglease::cli
