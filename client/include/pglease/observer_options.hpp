/// @file observer_options.hpp
/// @brief Settings of an observer, each with its default.
#pragma once

#include "pglease/connection_options.hpp"

#include "pglease/internal/lease_view.hpp"

#include <chrono>
#include <functional>
#include <string>

namespace pglease {

/// Settings of an observer. validate() throws config_error.
struct observer_options {
    /// The lease to follow (required, as for lease names).
    std::string lease_name;
    /// The observer's own session (default: PG* variables). listen = false
    /// (or a pooler that drops notifications) leaves it re-reading at the
    /// known expiry and every resync_period only.
    connection_options connection;
    /// Longest time between two readings (default 10 s): catches whatever no
    /// notification told (a session dropped while waiting, a pooler).
    std::chrono::milliseconds resync_period{10000};
    /// Pause after a failed reading before the next (default 1 s); the
    /// next reading reconnects.
    std::chrono::milliseconds retry_period{1000};
    /// Called on the observer's thread for every change, with the view
    /// that shows it (optional; exceptions are ignored). Must not call stop().
    std::function<void(lease_change, const lease_view&)> on_change;

    /// Throws config_error for a bad lease name or a non-positive period.
    void validate() const;
};

} // namespace pglease
