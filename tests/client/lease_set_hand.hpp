/// @file lease_set_hand.hpp
/// @brief A lease set's state machine driven by hand on the test double's
/// store and manual clock (test_lease_set_state.cpp): configs, a set on a
/// counting session, stepping with callbacks that return at once.
#pragma once

#include "flaky_backend.hpp"
#include "pglease/testing.hpp"
#include "sets/lease_set_state.hpp"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace pglease::test {

using namespace std::chrono_literals;
using pglease::testing::lease_store;

inline std::vector<std::string> names(std::size_t count, const std::string& prefix = "job/") {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < count; ++i)
        out.push_back(prefix + std::to_string(i));
    return out;
}

/// The step-by-step tests' timings, for any holder's config: ttl 15 s
/// (margin 1 s: local deadline = sent + 14 s), renew deadline 10 s, retry
/// period 2 s.
template <typename Config>
Config hand_timed(Config c, const std::string& identity) {
    c.identity = identity;
    c.ttl = 15s;
    c.renew_deadline = 10s;
    c.retry_period = 2s;
    return c;
}

inline lease_set_config config(const std::string& identity, std::size_t count) {
    lease_set_config c;
    c.names = names(count);
    return hand_timed(std::move(c), identity);
}

/// One set driven by hand, on a counting session of the store.
struct hand_set {
    hand_set(lease_store& store, const std::string& identity, std::size_t count)
        : hand_set{store, config(identity, count)} {}
    hand_set(lease_store& store, const lease_set_config& cfg)
        : owned{std::make_unique<flaky_backend>(store.connect())}
        , db{*owned}
        , state{db, cfg, store.clock(), 7} {}

    std::unique_ptr<flaky_backend> owned;
    flaky_backend& db;
    lease_set_state state;

    /// Steps; every lost term's callback "returns" at once.
    std::vector<lease_set_event> step_and_finish() {
        auto events = state.step();
        for (const auto& e : events)
            if (e.what == lease_set_event::kind::lost)
                state.callback_done(e.name, e.epoch);
        return events;
    }
};

inline std::set<std::string> of_kind(const std::vector<lease_set_event>& events,
                                     lease_set_event::kind k) {
    std::set<std::string> out;
    for (const auto& e : events)
        if (e.what == k)
            out.insert(e.name);
    return out;
}

/// Advances to each due step until @p until, stepping (callbacks return at once).
inline std::vector<lease_set_event> run_until(lease_store& store, hand_set& s,
                                              clock::time_point until) {
    std::vector<lease_set_event> all;
    while (store.clock().now() < until) {
        const auto next = std::min(s.state.next_step(), until);
        store.advance(std::max(next - store.clock().now(), clock::duration{1ms}));
        for (auto& e : s.step_and_finish())
            all.push_back(std::move(e));
    }
    return all;
}

} // namespace pglease::test
