/// @file handover.hpp
/// @brief What a planned handover to a chosen successor did (elector::yield_to,
/// elector_config::preferred_successor).
#pragma once

#include <cstdint>
#include <string>

namespace pglease {

/// The outcome of one planned handover (SQL: lease_handover). The leader's
/// work had stopped (its stop_token signalled, on_started_leading returned,
/// on_stopped_leading called) before the server was asked, whatever the
/// outcome.
struct handover_result {
    enum class outcome {
        handed_over, ///< @ref successor holds the lease now, with @ref new_epoch
        not_leading, ///< there was no term to hand over: nothing was done
        not_ours,    ///< lease_handover returned NULL: the grant was already gone
                     ///< (lost, expired, revoked, taken over); nothing changed
        failed,      ///< the call failed (@ref message): outcome unknown; a release
                     ///< was tried so the lease does not sit until its ttl
    };
    outcome what = outcome::not_leading;
    std::string successor;     ///< the identity asked to take over
    std::int64_t old_epoch{0}; ///< the term that was handed over (0: none)
    std::int64_t new_epoch{0}; ///< handed_over: the successor's epoch
    std::string message;       ///< not_ours, failed: why, for logs

    /// True when the successor holds the lease.
    [[nodiscard]] bool ok() const noexcept { return what == outcome::handed_over; }
};

} // namespace pglease
