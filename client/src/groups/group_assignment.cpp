/// @file group_assignment.cpp
/// @brief Rendezvous hashing with bounded loads.
#include "pglease/internal/group_assignment.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace pglease {
namespace {

constexpr std::uint64_t fnv_offset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t fnv_prime = 0x100000001b3ULL;

std::uint64_t fnv1a(std::uint64_t h, std::string_view s) noexcept {
    for (const char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= fnv_prime;
    }
    return h;
}

std::uint64_t splitmix64(std::uint64_t z) noexcept {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

struct candidate {
    double score;
    std::uint64_t hash;
    std::uint32_t shard;
    std::uint32_t member;
};

} // namespace

std::uint64_t rendezvous_hash(std::string_view shard, std::string_view member) noexcept {
    // The length goes first, so ("ab", "c") and ("a", "bc") differ.
    std::uint64_t h = fnv1a(fnv_offset, std::to_string(shard.size()));
    h = fnv1a(h, shard);
    h = fnv1a(h ^ 0xff, member);
    return splitmix64(h);
}

std::vector<std::string> assign_shards(const std::vector<std::string>& shards,
                                       std::vector<group_member_info> members) {
    std::vector<std::string> owner(shards.size());
    // 1. One entry per identity (the larger weight), in identity order.
    std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) {
        return std::tie(a.identity, b.weight) < std::tie(b.identity, a.weight);
    });
    members.erase(
        std::unique(members.begin(), members.end(),
                    [](const auto& a, const auto& b) { return a.identity == b.identity; }),
        members.end());
    members.erase(
        std::remove_if(members.begin(), members.end(), [](const auto& m) { return m.weight == 0; }),
        members.end());
    if (members.empty() || shards.empty())
        return owner;

    // 2. Capacities: ceil(N x w / W) each, so they add up to at least N.
    std::uint64_t total = 0;
    bool uniform = true;
    for (const auto& m : members) {
        total += m.weight;
        uniform = uniform && m.weight == members.front().weight;
    }
    std::vector<std::uint64_t> room;
    for (const auto& m : members)
        room.push_back((shards.size() * m.weight + total - 1) / total);

    // 3. Every (shard, member) pair with its score.
    std::vector<candidate> pairs;
    pairs.reserve(shards.size() * members.size());
    for (std::uint32_t s = 0; s < shards.size(); ++s) {
        for (std::uint32_t m = 0; m < members.size(); ++m) {
            const std::uint64_t h = rendezvous_hash(shards[s], members[m].identity);
            double score = 0;
            if (!uniform) {
                const double u = (static_cast<double>(h >> 11) + 0.5) / 9007199254740992.0;
                score = static_cast<double>(members[m].weight) / -std::log(u);
            }
            pairs.push_back({score, h, s, m});
        }
    }
    std::sort(pairs.begin(), pairs.end(), [&](const candidate& a, const candidate& b) {
        if (a.score != b.score)
            return a.score > b.score;
        if (a.hash != b.hash)
            return a.hash > b.hash;
        if (a.shard != b.shard)
            return shards[a.shard] < shards[b.shard];
        return a.member < b.member;
    });

    // 4. Best pairs first; a shard goes to its best member with room left.
    std::size_t left = shards.size();
    for (const candidate& c : pairs) {
        if (!owner[c.shard].empty() || room[c.member] == 0)
            continue;
        owner[c.shard] = members[c.member].identity;
        --room[c.member];
        if (--left == 0)
            break;
    }
    return owner;
}

} // namespace pglease
