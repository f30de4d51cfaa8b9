/// @file phase_links.cpp
/// @brief How a phase's workers reach their servers: directly, from hosts
/// of their own (netns.hpp), or through slow links (tcp_relay.hpp).
#include "phase.hpp"

#include "downstream.hpp"

namespace fault {

void phase::use_hosts(int n) {
    m_hosts = std::make_unique<net_hosts>(n);
}

int phase::host_of(const std::string& label) const {
    for (const auto& p : m_procs)
        if (p.label == label)
            return p.host;
    return -1;
}

namespace {

pglease_test::tcp_relay* nth(const std::vector<std::unique_ptr<pglease_test::tcp_relay>>& v,
                             int i) {
    return i >= 0 && i < static_cast<int>(v.size()) ? v[static_cast<std::size_t>(i)].get()
                                                    : nullptr;
}

std::string via(const pglease_test::tcp_relay& link, const char* dbname) {
    return "host=127.0.0.1 port=" + std::to_string(link.port()) + " user=" + app_user() +
           " dbname=" + dbname;
}

} // namespace

pglease_test::tcp_relay* phase::relay_of(const std::string& label) {
    return nth(m_relays, host_of(label));
}

pglease_test::tcp_relay* phase::down_relay_of(const std::string& label) {
    return nth(m_down_relays, host_of(label));
}

std::pair<std::string, std::string> phase::links_for(int& host) {
    std::string conninfo = m_conninfo;
    std::string downstream = m_downstream;
    if (m_relay_count > 0) {
        while (static_cast<int>(m_relays.size()) < m_relay_count) {
            m_relays.push_back(
                std::make_unique<pglease_test::tcp_relay>("127.0.0.1", primary().port()));
            if (!m_downstream.empty()) // a link of its own, cut apart (netdown)
                m_down_relays.push_back(
                    std::make_unique<pglease_test::tcp_relay>("127.0.0.1", primary().port()));
        }
        if (host < 0)
            host = m_next_host++ % m_relay_count;
        conninfo = via(*nth(m_relays, host), app_db());
        if (!m_downstream.empty())
            downstream = via(*nth(m_down_relays, host), downstream_dbname);
    } else if (m_hosts) {
        if (host < 0)
            host = m_next_host++ % m_hosts->size();
        conninfo = "host=" + m_hosts->server_addr(host) +
                   " port=" + std::to_string(primary().port()) + " user=" + app_user() +
                   " dbname=" + app_db();
        // over the host's own link: a cut holds its downstream writes too
        if (!m_downstream.empty())
            downstream = conninfo + " dbname=" + downstream_dbname;
    }
    return {conninfo, downstream};
}

} // namespace fault
