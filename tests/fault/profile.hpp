/// @file profile.hpp
/// @brief The phases of a profile: what each injects, how often, and the
/// floors it must reach.
#pragma once

#include "bundle.hpp"
#include "options.hpp"

#include <random>
#include <vector>

namespace fault {

/// Injections (or seconds) per phase.
struct plan {
    int pause = 8, kill = 10, terminate = 8, crash = 6, clock = 12;
    int pause_in_txn = 6, long_txn = 4;
    int netcut = 2;  ///< of each way: both, to the leader's host, from it
    int netslow = 2; ///< of each kind: delay, jitter, flapping (a slow link)
    int netdown = 2; ///< of each kind: the downstream link alone, then both
    int storm16_s = 15, storm64_s = 18, storm200_s = 0, pool_s = 15, storm_kill_every_ms = 1800;
    int failover_async = 5, failover_sync = 5;
    int downstream = 3;     ///< of each: pause, pause in a transaction, kill
    int handover = 6;       ///< planned handovers (yield_to another worker)
    int mixed_s = 0;        ///< soak: a mixed schedule of the single-cluster faults
    int clock_max_ttls = 5; ///< largest clock step, in ttls
};

/// The short profile's plan, or the soak's: fixed counts that reach the
/// figures docs/safety.md states, plus @p s.duration_s of mixed schedule.
plan make_plan(const settings& s);

/// Runs the selected phases; returns their recorded histories.
std::vector<phase_bundle> run_profile(const settings& s, const plan& p, std::mt19937& rng);

} // namespace fault
