/// @file group_config.cpp
/// @brief Validation of group member settings.
#include "pglease/group_config.hpp"

#include "pglease/error.hpp"

#include "pglease/internal/group_names.hpp"

#include <algorithm>
#include <array>
#include <set>

namespace pglease {

namespace {
constexpr std::size_t max_group_name = 100;
constexpr std::size_t max_lease_name = 255;
} // namespace

const char* to_string(shard_stop_reason r) noexcept {
    static constexpr std::array names{"moved", "lost", "renew_deadline", "leaving", "failed"};
    const auto i = static_cast<std::size_t>(r);
    return i < names.size() ? names[i] : "unknown";
}

void group_config::validate() const {
    if (group.empty() || group.size() > max_group_name)
        throw config_error{"group name must be 1 to 100 bytes long"};
    if (group.find('\0') != std::string::npos)
        throw config_error{"group name must not contain a NUL byte"};
    validate_holder();
    if (weight < 1 || weight > max_group_weight)
        throw config_error{"weight must be between 1 and 1000"};
    if (group_member_lease(group, identity, weight).size() > max_lease_name)
        throw config_error{"group name and identity are too long for the membership lease name "
                           "(at most 255 bytes: \"" +
                           group_member_lease(group, "", weight) + "<identity>\")"};
    if (shards.empty())
        throw config_error{"a group needs at least one shard"};
    std::set<std::string> seen;
    for (const auto& s : shards) {
        if (s.empty())
            throw config_error{"shard names must not be empty"};
        if (!seen.insert(s).second)
            throw config_error{"shard \"" + s + "\" is listed twice"};
        const std::string lease = group_shard_lease(group, s);
        validate_lease_name(lease);
    }
}

std::vector<std::string> numbered_shards(const std::string& prefix, std::size_t count) {
    std::vector<std::string> out;
    out.reserve(count);
    for (std::size_t i = 0; i < count; ++i)
        out.push_back(prefix + "/" + std::to_string(i));
    return out;
}

} // namespace pglease
