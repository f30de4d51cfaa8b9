/// @file group_assignment.hpp
/// @brief Which member of a lease group owns which shard: rendezvous
/// (highest-random-weight) hashing with bounded loads, computed alike by
/// every member from the same inputs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pglease {

/// A live member of a group, as its membership lease names it.
struct group_member_info {
    std::string identity;
    std::uint32_t weight = 1;

    friend bool operator==(const group_member_info& a, const group_member_info& b) {
        return a.identity == b.identity && a.weight == b.weight;
    }
    friend bool operator!=(const group_member_info& a, const group_member_info& b) {
        return !(a == b);
    }
};

/// The 64-bit rendezvous hash of (@p shard, @p member): FNV-1a over both
/// names, then the splitmix64 finaliser. The same on every platform.
[[nodiscard]] std::uint64_t rendezvous_hash(std::string_view shard,
                                            std::string_view member) noexcept;

/// The owner of each shard: result[i] is the identity that owns shards[i]
/// (empty when @p members is empty).
///
/// Plain rendezvous hashing gives each shard to the member with the highest
/// score, so a join or leave moves only the shards that member wins or had
/// (the minimum), but the counts scatter (with 8 members and 256 shards the
/// busiest gets about 41 instead of 32). So the loads are bounded: member m
/// takes at most ceil(N x weight(m) / total weight) shards, and the
/// (shard, member) pairs are taken in descending score order, each shard
/// going to the first member in that order with room left. Counts are then
/// within one shard of the weighted ideal, and a join or leave moves about
/// 1.2 x the minimum (figures in docs/cpp.md).
///
/// Scores: the hash itself when all weights are equal (exact integers), else
/// weight / -ln(u) with u the hash scaled into (0, 1) (weighted rendezvous).
/// Ties go by hash, then shard name, then identity. A member listed twice
/// counts once, with its larger weight. Deterministic: the same shards and
/// members, in any order, give the same result.
[[nodiscard]] std::vector<std::string> assign_shards(const std::vector<std::string>& shards,
                                                     std::vector<group_member_info> members);

} // namespace pglease
