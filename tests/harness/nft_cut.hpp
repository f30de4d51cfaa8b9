/// @file nft_cut.hpp
/// @brief The one nftables rule set that cuts a test host off (every suite
/// in C++ that cuts a network namespace; tests/harness/netns.sh is the
/// shell's): `drop` on the namespace's link `eth0`, so its sockets stay
/// open and silent, as behind a dead switch port. Run inside the host's
/// namespace (`ip netns exec NS ...`).
#pragma once

#include <string>
#include <vector>

namespace pglease_test {

/// Which packets a cut drops, seen from the host.
enum class cut_way { both, to_host, from_host };

/// "both", "in" or "out" (names of fault kinds).
inline const char* name_of(cut_way w) noexcept {
    switch (w) {
    case cut_way::to_host:
        return "in";
    case cut_way::from_host:
        return "out";
    default:
        return "both";
    }
}

/// argv that cuts the namespace it runs in.
inline std::vector<std::string> nft_cut(cut_way way = cut_way::both) {
    std::string rules;
    if (way != cut_way::from_host)
        rules += " chain in { type filter hook input priority 0; iifname \"eth0\" drop; };";
    if (way != cut_way::to_host)
        rules += " chain out { type filter hook output priority 0; oifname \"eth0\" drop; };";
    return {"nft", "add table inet cut {" + rules + " }"};
}

/// argv that removes the cut.
inline std::vector<std::string> nft_heal() {
    return {"nft", "delete", "table", "inet", "cut"};
}

/// @p argv as one sh(1) command line (each word single-quoted).
inline std::string shell_words(const std::vector<std::string>& argv) {
    std::string out;
    for (const std::string& word : argv) {
        out += out.empty() ? "'" : " '";
        for (const char c : word)
            out += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
        out += '\'';
    }
    return out;
}

} // namespace pglease_test
