/// @file test_group_assignment.cpp
/// @brief Lease group names and the shard assignment: pure functions.
#include "pglease/error.hpp"
#include "pglease/group_config.hpp"

#include "pglease/internal/group_assignment.hpp"
#include "pglease/internal/group_names.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

namespace pglease {
namespace {

std::vector<group_member_info> members_named(const std::string& prefix, int count) {
    std::vector<group_member_info> out;
    for (int i = 0; i < count; ++i)
        out.push_back({prefix + std::to_string(i), 1});
    return out;
}

std::map<std::string, int> counts(const std::vector<std::string>& owners) {
    std::map<std::string, int> c;
    for (const auto& o : owners)
        ++c[o];
    return c;
}

int moved(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    int n = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        n += a[i] != b[i] ? 1 : 0;
    return n;
}

TEST(group_names, round_trip_with_slashes_quotes_and_percent_signs) {
    const std::string group = "a/b%c'\"d";
    const std::string shard = "orders/7/member/1/x";
    const auto s = parse_group_lease(group_shard_lease(group, shard));
    ASSERT_TRUE(s);
    EXPECT_EQ(s->what, group_lease_name::kind::shard);
    EXPECT_EQ(s->group, group);
    EXPECT_EQ(s->shard, shard);
    EXPECT_EQ(group_shard_lease(group, shard), "pglease:group/a%2Fb%25c'\"d/shard/" + shard);

    const auto m = parse_group_lease(group_member_lease(group, "host/1:'x'", 7));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->what, group_lease_name::kind::member);
    EXPECT_EQ(m->group, group);
    EXPECT_EQ(m->identity, "host/1:'x'");
    EXPECT_EQ(m->weight, 7U);
}

TEST(group_names, groups_members_and_shards_never_collide) {
    // "a/b" + shard "x" against "a" + shard "b/x", and members against shards.
    EXPECT_NE(group_shard_lease("a/b", "x"), group_shard_lease("a", "b/x"));
    EXPECT_NE(group_shard_lease("a", "member/1/x"), group_member_lease("a", "x", 1));
    EXPECT_EQ(parse_group_lease(group_shard_lease("a", "member/1/x"))->what,
              group_lease_name::kind::shard);
    EXPECT_TRUE(group_shard_lease("a%2F", "x") != group_shard_lease("a/", "x"));
    EXPECT_EQ(parse_group_lease(group_shard_lease("a%2F", "x"))->group, "a%2F");
}

TEST(group_names, other_names_are_not_group_leases) {
    for (const char* name :
         {"orders/0", "pglease:group/", "pglease:group/g", "pglease:group//shard/0",
          "pglease:group/g/shard/", "pglease:group/g/other/0", "pglease:group/g/member/0/x",
          "pglease:group/g/member/1001/x", "pglease:group/g/member/01/x",
          "pglease:group/g/member/1/", "pglease:group/g/member/x", "pglease:group/b%2/shard/0",
          "pglease:group/b%41/shard/0"})
        EXPECT_FALSE(parse_group_lease(name)) << name;
}

TEST(group_config, validation) {
    group_config c;
    c.group = "orders";
    c.shards = numbered_shards("orders", 4);
    EXPECT_NO_THROW(c.validate());
    EXPECT_EQ(c.shards.back(), "orders/3");
    const auto rejects = [&](auto change) {
        group_config bad = c;
        change(bad);
        EXPECT_THROW(bad.validate(), config_error);
    };
    rejects([](group_config& b) { b.group.clear(); });
    rejects([](group_config& b) { b.group = std::string(101, 'g'); });
    rejects([](group_config& b) { b.shards.clear(); });
    rejects([](group_config& b) { b.shards.push_back("orders/0"); });
    rejects([](group_config& b) { b.shards.push_back(""); });
    rejects([](group_config& b) { b.shards.push_back(std::string(250, 's')); });
    rejects([](group_config& b) { b.identity = std::string(250, 'i'); });
    rejects([](group_config& b) { b.weight = 0; });
    rejects([](group_config& b) { b.weight = 1001; });
    rejects([](group_config& b) { b.renew_deadline = b.ttl; });
    rejects([](group_config& b) { b.retry_period = b.renew_deadline; });
}

TEST(group_assignment, deterministic_whatever_the_order) {
    const auto shards = numbered_shards("orders", 256);
    auto members = members_named("host-", 8);
    const auto first = assign_shards(shards, members);
    std::mt19937 rng{42};
    for (int i = 0; i < 5; ++i) {
        std::shuffle(members.begin(), members.end(), rng);
        auto dup = members;
        dup.push_back(members.front()); // listed twice counts once
        EXPECT_EQ(assign_shards(shards, dup), first);
    }
    EXPECT_EQ(rendezvous_hash("orders/1", "host-1"), rendezvous_hash("orders/1", "host-1"));
    EXPECT_NE(rendezvous_hash("ab", "c"), rendezvous_hash("a", "bc"));
}

TEST(group_assignment, every_shard_owned_and_balanced) {
    const auto shards = numbered_shards("orders", 256);
    EXPECT_TRUE(assign_shards(shards, {}).front().empty());
    for (int n : {1, 3, 7, 8, 9, 16}) {
        const auto owners = assign_shards(shards, members_named("m", n));
        const auto c = counts(owners);
        EXPECT_EQ(c.count(""), 0U);
        EXPECT_EQ(static_cast<int>(c.size()), n);
        const int ceiling = (256 + n - 1) / n;
        for (const auto& [who, k] : c)
            EXPECT_LE(k, ceiling) << who << " of " << n;
    }
    // Weights: 1, 1, 2, 4 of 256 -> 32, 32, 64, 128.
    const auto c = counts(assign_shards(shards, {{"a", 1}, {"b", 1}, {"c", 2}, {"d", 4}}));
    EXPECT_EQ(c.at("a"), 32);
    EXPECT_EQ(c.at("b"), 32);
    EXPECT_EQ(c.at("c"), 64);
    EXPECT_EQ(c.at("d"), 128);
}

TEST(group_assignment, join_and_leave_move_few_shards) {
    // The minimum a join must move is what the new member gets (256 / 9);
    // a leave, what the member had (32). Plain rendezvous moves exactly that;
    // bounded loads move somewhat more (about 1.2 x); allow 1.5 x.
    const auto shards = numbered_shards("orders", 256);
    int join_total = 0;
    int leave_total = 0;
    const int trials = 10;
    for (int t = 0; t < trials; ++t) {
        const auto eight = members_named("run" + std::to_string(t) + "-", 8);
        const auto before = assign_shards(shards, eight);
        auto nine = eight;
        nine.push_back({"newcomer-" + std::to_string(t), 1});
        const auto joined = assign_shards(shards, nine);
        auto seven = eight;
        seven.erase(seven.begin() + t % 8);
        const auto left = assign_shards(shards, seven);
        const int j = moved(before, joined);
        const int l = moved(before, left);
        EXPECT_GE(j, 28);
        EXPECT_GE(l, 32);
        join_total += j;
        leave_total += l;
    }
    EXPECT_LE(join_total, trials * 256 / 9 * 3 / 2);
    EXPECT_LE(leave_total, trials * 32 * 3 / 2);
    std::cout << "[ figures  ] shards moved, mean of " << trials
              << " (256 shards, 8 members): join " << join_total / trials
              << " (minimum 28.4), leave " << leave_total / trials << " (minimum 32)\n";
}

} // namespace
} // namespace pglease
