/// @file single_phase.hpp
/// @brief The shape most phases share: one cluster, one lease, three
/// workers, a body that injects faults until enough were effective, then
/// the phase's floors.
#pragma once

#include "bundle.hpp"
#include "options.hpp"
#include "phase.hpp"

#include <functional>
#include <map>
#include <random>
#include <string>

namespace fault {

/// Calls @p inject(i) until @p planned of them were effective, at most
/// 2 x planned + 2 times. Returns the number of effective ones.
int until_effective(int planned, const std::function<bool(int)>& inject);

/// A phase of one cluster, lease "l0" and three workers.
struct single {
    std::string name;
    std::map<std::string, int> planned;
    phase_floors floors;
    bool faketime = false;
    std::function<void(phase&)> body;
    bool hosts = false;      ///< each worker on a host of its own (netns.hpp)
    bool relays = false;     ///< each worker through a slow link of its own (tcp_relay.hpp)
    bool downstream = false; ///< workers also write to a downstream database (downstream.hpp)
    int write_bound_ms = 0;  ///< every fenced transaction bounded by it (B1); 0: none
};

/// Runs @p def: starts the cluster and the workers, waits for a leader,
/// runs the body, lets the phase settle and checks it.
phase_bundle run_single(const settings& s, std::mt19937& rng, const single& def);

/// The handover phase (nemesis_handover.cpp): @p planned handovers, each
/// followed by a ttl (@p ttl_ms) and up to 500 ms of settling; at least
/// half of the successors confirm theirs by a read (the by_read floor), the
/// rest may have acquired (a hint lost to a reconnect).
single handover_phase(int planned, int ttl_ms);

/// A phase's floors: effective injections per kind, and minimum grants,
/// acknowledged fenced transactions and stale writes refused.
phase_floors floors(std::map<std::string, int> effective, long grants, long acked, long refused);

} // namespace fault
