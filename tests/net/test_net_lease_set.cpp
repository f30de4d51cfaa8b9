/// @file test_net_lease_set.cpp
/// @brief A lease_set of many leases on a host cut off both ways, or one way
/// (issue 38: lease sets under cuts), in the same binary and host as
/// test_net_bounds.cpp. Its renewals hang in the kernel, yet every lease's
/// term must end (its stop_token) before the grant can expire at the
/// server, which is at most one ttl after the cut (the last renewal that
/// reached the server was sent before it); after the heal the set must
/// hold every lease again, without a restart (its calls bounded: a call
/// stuck on the dead socket would keep it from acquiring).
#include "net_host.hpp"
#include "pglease/lease_set.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

using pglease_test::cut_way;

/// Cut both ways, only what goes to the host (renewals land, their replies
/// are lost), only what comes from it.
class net_lease_set : public ::testing::TestWithParam<cut_way> {};

TEST_P(net_lease_set, a_cut_off_set_ends_every_term_in_time_and_holds_them_again_after_the_heal) {
    ASSERT_FALSE(pglease_test::net_conninfo().empty())
        << "PGLEASE_NET_CONNINFO must name the server";
    constexpr int n = 50;
    constexpr auto ttl = 2000ms;
    pglease::lease_set_config cfg;
    const std::string way = pglease_test::name_of(GetParam());
    cfg.identity = "net-set-" + way;
    cfg.ttl = ttl;
    cfg.renew_deadline = 1400ms;
    cfg.retry_period = 300ms;
    cfg.connection.conninfo = pglease_test::net_conninfo();
    for (int i = 0; i < n; ++i)
        cfg.names.push_back("net-set-" + way + "/" + std::to_string(i));

    // Each term's stop_token watched by a thread of its own: when it fired.
    std::mutex mu;
    std::map<std::string, steady::time_point> stopped;
    std::vector<std::thread> watchers;
    cfg.callbacks.on_acquired = [&](const std::string& name, std::int64_t,
                                    pglease::stop_token stop) {
        const std::lock_guard lock{mu};
        watchers.emplace_back([&, name, stop] {
            stop.wait();
            const std::lock_guard l{mu};
            stopped.emplace(name, steady::now());
        });
    };

    pglease::lease_set set{cfg};
    set.start();
    const auto until = steady::now() + 20s;
    while (set.held_count() < n && steady::now() < until)
        std::this_thread::sleep_for(50ms);
    ASSERT_EQ(set.held_count(), std::size_t{n}) << "the set did not hold its leases before the cut";
    std::this_thread::sleep_for(800ms); // mid-cycle: renewals in flight

    pglease_test::host_cut c{GetParam()};
    const auto cut_at = steady::now();
    // Retry the observation: every term ended, within 2 x ttl at most.
    while (steady::now() < cut_at + 2 * ttl) {
        {
            const std::lock_guard lock{mu};
            if (static_cast<int>(stopped.size()) >= n)
                break;
        }
        std::this_thread::sleep_for(20ms);
    }
    {
        const std::lock_guard lock{mu};
        ASSERT_EQ(static_cast<int>(stopped.size()), n) << "terms still running after the cut";
        auto latest = steady::duration::zero();
        for (const auto& [name, t] : stopped) {
            EXPECT_LT(t - cut_at, ttl) << name << "'s term outlived the server's expiry";
            latest = std::max(latest, t - cut_at);
        }
        std::cout << "  cut " << way << ": every term ended within "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(latest).count()
                  << " ms of the cut (ttl " << ttl.count() << " ms)\n";
        stopped.clear();
    }
    EXPECT_EQ(set.held_count(), 0U);

    // Past the old grants' expiry at the server, then heal: the set (same
    // object, same threads) holds every lease again.
    std::this_thread::sleep_for(ttl - (steady::now() - cut_at) + 200ms);
    c.heal();
    const auto healed_at = steady::now();
    while (set.held_count() < n && steady::now() < healed_at + 15s)
        std::this_thread::sleep_for(50ms);
    EXPECT_EQ(set.held_count(), std::size_t{n}) << "the set did not hold its leases again";
    std::cout
        << "  held all " << n << " again "
        << std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - healed_at).count()
        << " ms after the heal\n";
    set.stop(); // every token signalled: the watchers end
    std::vector<std::thread> all;
    {
        const std::lock_guard lock{mu};
        all.swap(watchers);
    }
    for (auto& w : all)
        w.join();
}

/// The test's suffix: the way's name.
std::string way_name(const ::testing::TestParamInfo<cut_way>& p) {
    return pglease_test::name_of(p.param);
}

INSTANTIATE_TEST_SUITE_P(ways, net_lease_set,
                         ::testing::Values(cut_way::both, cut_way::to_host, cut_way::from_host),
                         way_name);

} // namespace
