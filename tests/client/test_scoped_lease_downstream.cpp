/// @file test_scoped_lease_downstream.cpp
/// @brief scoped_lease with downstream databases (extension 1.4): held only
/// once every downstream floor is raised to its epoch; a downstream that
/// fails or answers too late leaves the guard empty, with the grant given
/// back at once and refusal() saying why. Over the fake backend and clock.
#include "fake_backend.hpp"
#include "fake_clock.hpp"
#include "fake_downstream.hpp"
#include "pglease/scoped_lease.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;

struct fixture {
    fake_clock clk;
    fake_store store{clk};
    fake_downstream* first = nullptr; ///< owned by the guard
    fake_downstream* second = nullptr;

    /// ttl 10 s: the local deadline is 9 s after the acquire was sent.
    std::unique_ptr<scoped_lease> guard(const std::function<void()>& before = {}) {
        std::vector<std::unique_ptr<backend>> downstreams;
        auto a = std::make_unique<fake_downstream>(clk);
        auto b = std::make_unique<fake_downstream>(clk);
        first = a.get();
        second = b.get();
        if (before)
            before();
        downstreams.push_back(std::move(a));
        downstreams.push_back(std::move(b));
        lease_options o;
        o.identity = "me";
        o.ttl = 10s;
        return std::make_unique<scoped_lease>(std::make_unique<fake_backend>(store, &clk), "jobs",
                                              o, 0ms, clk, std::move(downstreams));
    }
};

TEST(scoped_lease_downstream, held_once_every_floor_is_raised_to_its_epoch) {
    fixture f;
    const auto g = f.guard();
    ASSERT_TRUE(g->held()) << g->refusal();
    EXPECT_TRUE(g->refusal().empty());
    EXPECT_EQ(f.first->floors["fake-store/jobs"], g->epoch());
    EXPECT_EQ(f.second->floors["fake-store/jobs"], g->epoch());
}

TEST(scoped_lease_downstream, an_unreachable_downstream_gives_the_grant_back) {
    fixture f;
    const auto g = f.guard([&] { f.second->fail = true; });
    EXPECT_FALSE(g->held());
    EXPECT_NE(g->refusal().find("downstream 2 of 2"), std::string::npos) << g->refusal();
    EXPECT_NE(g->refusal().find("unreachable"), std::string::npos) << g->refusal();
    EXPECT_EQ(f.store.row("jobs").holder, ""); // released at once, not left to expire
}

TEST(scoped_lease_downstream, a_raise_past_the_local_deadline_gives_the_grant_back) {
    fixture f;
    const auto g = f.guard([&] { f.first->latency = 10s; }); // past the 9 s local deadline
    EXPECT_FALSE(g->held());
    EXPECT_FALSE(g->refusal().empty());
    EXPECT_EQ(f.second->raises, 0);
    EXPECT_EQ(f.store.row("jobs").holder, "");
}

} // namespace
} // namespace pglease::test
