/// @file calibrate.hpp
/// @brief How many new sessions a second the phase's server can set up,
/// and how far a storm's churn is stretched to stay within it.
///
/// A storm's contenders resign and start a new elector, so a new session,
/// every 0.3-3 ttl. On 2 cores a backend start costs the server a fork,
/// authentication and the exit of one that ended: 23 ms on a VM whose
/// fork took 7 ms, so about 43 sessions a second. Where 64
/// contenders ask for more sessions than the server can start, every
/// phase fails on its own overload, not on the product. Such a storm runs
/// in slow motion: ttl, renew deadline, retry period, holds and the
/// phase's length all stretched by one factor, so the server is asked for
/// at most a quarter of the sessions it can start, every bound the checker
/// derives from the phase's ttl keeps its meaning, and the phase sees as
/// many grants as at full speed. Kills keep their pace (more per ttl).
#pragma once

#include "options.hpp"

#include <string>

namespace fault {

/// The median wall time, in ms, of @p n sequential connects (connect,
/// `SELECT 1`, close) to @p conninfo.
double connect_cost_ms(const std::string& conninfo, int n);

/// The factor (>= 1, at most 4) by which a storm of @p workers contenders
/// with a mean cycle of @p cycle_ms between new sessions is stretched so
/// it asks for at most a quarter of 1000 / @p cost_ms sessions a second.
double churn_stretch(int workers, double cycle_ms, double cost_ms);

/// Measures what a session costs the server at @p conninfo and stretches
/// @p fleet's ttl, renew deadline and retry period for storm @p name of
/// @p workers contenders; prints the figures, returns the factor (the
/// caller stretches the phase's length and holds by it).
double stretch_storm(settings& fleet, const std::string& conninfo, int workers,
                     const std::string& name);

/// churn_stretch's cases (no stretch, a stretch, the cap); false and a
/// line on stdout for each that fails. Part of --self-test.
bool churn_stretch_self_test();

} // namespace fault
