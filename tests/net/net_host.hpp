/// @file net_host.hpp
/// @brief For a test binary that runs inside a host of its own
/// (tests/net/bounds.sh): the server it reaches over its one link, and a
/// cut of that link (nftables, both ways or one) for the life of an object.
#pragma once

#include "nft_cut.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace pglease_test {

/// PGLEASE_NET_CONNINFO: the server, over the host's link.
inline std::string net_conninfo() {
    const char* c = std::getenv("PGLEASE_NET_CONNINFO");
    return c != nullptr ? c : "";
}

/// Cuts this host off (both ways, or one) for the life of the object.
class host_cut {
public:
    explicit host_cut(cut_way way = cut_way::both) {
        EXPECT_EQ(std::system(shell_words(nft_cut(way)).c_str()), 0) << "nft cut";
    }
    ~host_cut() { heal(); }
    host_cut(const host_cut&) = delete;
    host_cut& operator=(const host_cut&) = delete;
    host_cut(host_cut&&) = delete;
    host_cut& operator=(host_cut&&) = delete;
    /// Ends the cut early (idempotent).
    void heal() {
        if (m_on)
            (void)std::system(shell_words(nft_heal()).c_str());
        m_on = false;
    }

private:
    bool m_on = true;
};

} // namespace pglease_test
