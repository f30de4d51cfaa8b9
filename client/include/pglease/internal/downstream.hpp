/// @file downstream.hpp
/// @brief Raising a lease's floor in its downstream databases (extension
/// 1.4) before the work of a new term: what the elector, scoped_lease and
/// `pglease run` do, for any holder that starts terms itself.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/connection_options.hpp"

#include "pglease/internal/clock.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pglease {

/// One downstream database: its backend (not owned) and its name in reports.
struct downstream_ref {
    backend* db = nullptr;
    std::string label; ///< e.g. "downstream 1 of 2"
};

/// Raises the floor of (@p store's lease_store_id(), @p lease) to @p epoch
/// in each of @p downstreams, in order, every call bounded by @p deadline
/// (the grant's local deadline, on @p clk). Stops at the first one that
/// fails, is past the deadline, or whose floor is already above @p epoch.
/// Returns what failed, or an empty string when every floor is now
/// @p epoch; calls @p on_raised after each raise that succeeded. The term's
/// work must not start unless it returns empty: release the lease instead
/// (work whose floors were not raised would run unfenced there against a
/// paused old leader). No downstreams: empty, no I/O.
[[nodiscard]] std::string
raise_downstreams(backend& store, const std::vector<downstream_ref>& downstreams,
                  const std::string& lease, std::int64_t epoch, clock::time_point deadline,
                  const clock& clk = system_clock(),
                  const std::function<void(const downstream_ref&)>& on_raised = {});

/// Labels "downstream 1 of N" ... for @p backends, in order.
[[nodiscard]] std::vector<downstream_ref>
numbered_downstreams(const std::vector<backend*>& backends);
[[nodiscard]] std::vector<downstream_ref>
numbered_downstreams(const std::vector<std::unique_ptr<backend>>& backends);

/// A pq_backend per entry of @p options, in order (each connects on first use).
[[nodiscard]] std::vector<std::unique_ptr<backend>>
downstream_backends(const std::vector<connection_options>& options);

} // namespace pglease
