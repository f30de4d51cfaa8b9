/// @file group_names.cpp
/// @brief The lease names of a lease group: build and parse.
#include "pglease/internal/group_names.hpp"

namespace pglease {
namespace {

constexpr std::string_view member_tag{"member/"};
constexpr std::string_view shard_tag{"shard/"};

std::string escape(const std::string& group) {
    std::string out;
    for (const char c : group) {
        if (c == '%')
            out += "%25";
        else if (c == '/')
            out += "%2F";
        else
            out += c;
    }
    return out;
}

/// nullopt when @p text holds a '%' that is not "%25" or "%2F", or a '/'.
std::optional<std::string> unescape(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '/')
            return std::nullopt;
        if (c != '%') {
            out += c;
            continue;
        }
        const std::string_view code = text.substr(i, 3);
        if (code == "%25")
            out += '%';
        else if (code == "%2F")
            out += '/';
        else
            return std::nullopt;
        i += 2;
    }
    return out;
}

/// A weight as group_member_lease() writes it: 1..1000, no leading zero.
std::optional<std::uint32_t> parse_weight(std::string_view text) {
    if (text.empty() || text.size() > 4 || text.front() == '0')
        return std::nullopt;
    std::uint32_t w = 0;
    for (const char c : text) {
        if (c < '0' || c > '9')
            return std::nullopt;
        w = w * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (w > max_group_weight)
        return std::nullopt;
    return w;
}

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

} // namespace

std::string group_prefix(const std::string& group) {
    return std::string{group_lease_prefix} + escape(group) + "/";
}

std::string group_member_lease(const std::string& group, const std::string& identity,
                               std::uint32_t weight) {
    return group_prefix(group) + std::string{member_tag} + std::to_string(weight) + "/" + identity;
}

std::string group_shard_lease(const std::string& group, const std::string& shard) {
    return group_prefix(group) + std::string{shard_tag} + shard;
}

std::optional<group_lease_name> parse_group_lease(std::string_view name) {
    if (!starts_with(name, group_lease_prefix))
        return std::nullopt;
    std::string_view rest = name.substr(group_lease_prefix.size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0)
        return std::nullopt;
    auto group = unescape(rest.substr(0, slash));
    if (!group || group->empty())
        return std::nullopt;
    rest.remove_prefix(slash + 1);

    group_lease_name out;
    out.group = std::move(*group);
    if (starts_with(rest, shard_tag)) {
        rest.remove_prefix(shard_tag.size());
        if (rest.empty())
            return std::nullopt;
        out.what = group_lease_name::kind::shard;
        out.shard = std::string{rest};
        return out;
    }
    if (!starts_with(rest, member_tag))
        return std::nullopt;
    rest.remove_prefix(member_tag.size());
    const auto end = rest.find('/');
    if (end == std::string_view::npos)
        return std::nullopt;
    const auto weight = parse_weight(rest.substr(0, end));
    if (!weight || end + 1 >= rest.size())
        return std::nullopt;
    out.what = group_lease_name::kind::member;
    out.weight = *weight;
    out.identity = std::string{rest.substr(end + 1)};
    return out;
}

} // namespace pglease
