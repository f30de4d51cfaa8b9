/// @file netns.hpp
/// @brief Hosts for network faults: each a network namespace joined to the
/// suite's by a veth pair, with addresses on that link only (10.231.X.1
/// here, .2 there; a free /30), so its traffic goes nowhere else. A cut is
/// nftables `drop` inside the host: its sockets stay open and silent, as
/// behind a dead switch port. The same scheme as tests/harness/netns.sh.
#pragma once

#include "nft_cut.hpp"

#include <string>
#include <vector>

namespace fault {

using pglease_test::cut_way;
using pglease_test::name_of;

class net_hosts {
public:
    /// Makes @p n hosts; throws std::runtime_error if the machine cannot.
    explicit net_hosts(int n);
    /// Removes every host (and whatever still runs in it).
    ~net_hosts();
    net_hosts(const net_hosts&) = delete;
    net_hosts& operator=(const net_hosts&) = delete;
    net_hosts(net_hosts&&) = delete;
    net_hosts& operator=(net_hosts&&) = delete;

    [[nodiscard]] int size() const noexcept { return static_cast<int>(m_hosts.size()); }
    /// The suite's address on host @p i's link (the server listens there).
    [[nodiscard]] const std::string& server_addr(int i) const;
    /// Runs argv inside host @p i: the prefix to put before it.
    [[nodiscard]] std::vector<std::string> exec_prefix(int i) const;
    /// "127.0.0.1,<every server_addr>": the server's listen_addresses.
    [[nodiscard]] std::string listen_addresses() const;
    /// The pg_hba.conf line that lets the hosts in.
    static const char* hba_line() noexcept;

    /// Drops host @p i's packets (returns false if nft refused).
    bool cut(int i, cut_way way) const;
    /// Removes the cut.
    void heal(int i) const;

private:
    struct host {
        std::string ns;
        std::string veth;
        std::string addr;
    };
    std::vector<host> m_hosts;
};

} // namespace fault
