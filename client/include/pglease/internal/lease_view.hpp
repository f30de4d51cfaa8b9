/// @file lease_view.hpp
/// @brief What an observer knows of a lease, and the changes it reports.
#pragma once

#include "pglease/internal/clock.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace pglease {

/// One reading of a lease (a lease_status row), as an observer saw it.
struct lease_view {
    std::string name;
    /// The grant of record's holder; empty when the lease is free (released,
    /// revoked) or has no row. An expired grant keeps its holder.
    std::string holder;
    /// The grant of record's epoch (0: no row yet).
    std::int64_t epoch = 0;
    /// Held and unexpired on the server's clock when it was read.
    bool valid = false;
    /// When valid: local estimate of the expiry (arrival of the reading +
    /// the time left the server reported), never earlier than the real one.
    std::optional<clock::time_point> expires;
    /// When it was read (observer's clock); clock::time_point{} before the
    /// first reading.
    clock::time_point read_at{};
    /// True when the latest attempt to re-read failed (connection lost, server
    /// down): this is the last view known, and it may be out of date.
    bool stale = false;
    /// Number of changes reported so far (see lease_change).
    std::uint64_t version = 0;
};

/// A change an observer reports.
enum class lease_change {
    acquired, ///< a new grant: acquire of a free lease, takeover after expiry, handover
    freed,    ///< the grant ended early: released or revoked
    expired,  ///< the grant ran out without being renewed or released
};

/// The change from @p before to @p after, if any: a new valid epoch is
/// acquired; a valid grant that is no longer valid is freed (no holder) or
/// expired (holder kept). A renewal (same epoch, later expiry) is no change.
[[nodiscard]] std::optional<lease_change> compare(const lease_view& before,
                                                  const lease_view& after) noexcept;

/// "acquired", "freed", "expired".
[[nodiscard]] const char* to_string(lease_change change) noexcept;

} // namespace pglease
