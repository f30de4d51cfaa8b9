/// @file netns.cpp
/// @brief Hosts for network faults (see netns.hpp), made with ip(8) and
/// cut with nft(8) (tests/harness/nft_cut.hpp).
#include "netns.hpp"

#include "common.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <stdexcept>

namespace fault {
namespace {

int run(const std::vector<std::string>& argv) {
    return run_command(argv, false, {}, "", 10);
}

/// True if some interface here has @p addr.
bool address_in_use(const std::string& addr) {
    return run({"sh", "-c", "ip -o -4 addr show | grep -q ' " + addr + "/'"}) == 0;
}

/// Held while a free subnet is picked and claimed: the lock every suite
/// that makes hosts takes (tests/harness/netns.sh), so that two runs at
/// once never pick the same subnet.
class subnet_lock {
public:
    subnet_lock()
        : m_fd{::open("/tmp/pglease-net-hosts.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0666)} {
        if (m_fd < 0 || ::flock(m_fd, LOCK_EX) != 0)
            throw std::runtime_error{"net_hosts: cannot lock /tmp/pglease-net-hosts.lock"};
    }
    ~subnet_lock() { ::close(m_fd); }
    subnet_lock(const subnet_lock&) = delete;
    subnet_lock& operator=(const subnet_lock&) = delete;
    subnet_lock(subnet_lock&&) = delete;
    subnet_lock& operator=(subnet_lock&&) = delete;

private:
    int m_fd;
};

} // namespace

net_hosts::net_hosts(int n) {
    const subnet_lock lock;
    const std::string pid = std::to_string(::getpid() % 100000);
    for (int i = 1; i <= 250 && size() < n; ++i) {
        const std::string subnet = "10.231." + std::to_string(i) + ".";
        if (address_in_use(subnet + "1"))
            continue; // another run's
        host h{"pglf" + pid + "-" + std::to_string(i), "pglf" + std::to_string(i) + "h" + pid,
               subnet + "1"};
        if (run({"ip", "netns", "add", h.ns}) != 0)
            continue;
        if (run({"ip", "link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns",
                 h.ns}) != 0) {
            run({"ip", "netns", "del", h.ns});
            continue;
        }
        m_hosts.push_back(h);
        const bool up =
            run({"ip", "addr", "add", subnet + "1/30", "dev", h.veth}) == 0 &&
            run({"ip", "link", "set", h.veth, "up"}) == 0 &&
            run({"ip", "-n", h.ns, "addr", "add", subnet + "2/30", "dev", "eth0"}) == 0 &&
            run({"ip", "-n", h.ns, "link", "set", "eth0", "up"}) == 0 &&
            run({"ip", "-n", h.ns, "link", "set", "lo", "up"}) == 0;
        if (!up)
            throw std::runtime_error{"net_hosts: could not set up " + h.ns};
    }
    if (size() < n)
        throw std::runtime_error{"net_hosts: no free 10.231.X.0/30 (or no ip netns here)"};
}

net_hosts::~net_hosts() {
    for (const host& h : m_hosts) {
        run({"sh", "-c", "ip netns pids " + h.ns + " | xargs -r kill -KILL"});
        run({"ip", "link", "del", h.veth});
        run({"ip", "netns", "del", h.ns});
    }
}

const std::string& net_hosts::server_addr(int i) const {
    return m_hosts.at(static_cast<std::size_t>(i)).addr;
}

std::vector<std::string> net_hosts::exec_prefix(int i) const {
    return {"ip", "netns", "exec", m_hosts.at(static_cast<std::size_t>(i)).ns};
}

std::string net_hosts::listen_addresses() const {
    std::string out = "127.0.0.1";
    for (const host& h : m_hosts)
        out += "," + h.addr;
    return out;
}

const char* net_hosts::hba_line() noexcept {
    return "host all all 10.231.0.0/16 trust";
}

bool net_hosts::cut(int i, cut_way way) const {
    auto argv = exec_prefix(i);
    const auto nft = pglease_test::nft_cut(way);
    argv.insert(argv.end(), nft.begin(), nft.end());
    return run(argv) == 0;
}

void net_hosts::heal(int i) const {
    auto argv = exec_prefix(i);
    const auto nft = pglease_test::nft_heal();
    argv.insert(argv.end(), nft.begin(), nft.end());
    run(argv);
}

} // namespace fault
