/// @file nemesis_net.cpp
/// @brief Network faults: hosts cut off by nftables (netns.hpp), links
/// slowed or held by the suite's relay (tcp_relay.hpp), each verified to
/// have bitten.
#include "nemesis.hpp"

#include "common.hpp"

#include <functional>
#include <vector>

namespace fault {
namespace {

using pglease_test::tcp_relay;

/// Polls every 20 ms, for at most 5 x ttl from @p t, until a process other
/// than @p label holds a valid grant of @p lease; @p tick runs before each
/// look (a flapping link's next flip). True if one did.
bool another_leads(phase& ph, const std::string& lease, const std::string& label, std::int64_t t,
                   const std::function<void()>& tick = {}) {
    const std::int64_t until = t + std::int64_t{5} * ph.m_s.ttl_ms * 1000000;
    while (mono_ns() < until && !interrupted()) {
        if (tick)
            tick();
        const std::string holder = valid_holder(ph, lease);
        if (!holder.empty() && !same_process(holder, label))
            return true;
        sleep_ms(20);
    }
    return false;
}

/// The leader's links: to the store, and to the downstream database if any.
std::vector<tcp_relay*> links_of(phase& ph, const std::string& label) {
    std::vector<tcp_relay*> out;
    for (tcp_relay* link : {ph.relay_of(label), ph.down_relay_of(label)})
        if (link != nullptr)
            out.push_back(link);
    return out;
}

} // namespace

bool inject_netcut(phase& ph, const std::string& lease, cut_way way) {
    const std::string kind = std::string{"netcut-"} + name_of(way);
    if (ph.disabled(kind) || ph.hosts() == nullptr)
        return false;
    auto l = ph.wait_leader(lease, 5000);
    if (!l)
        return false;
    const int host = ph.host_of(l->label);
    if (host < 0)
        return false;
    const auto t = mono_ns();
    if (!ph.hosts()->cut(host, way))
        return false;
    // Its sockets stay open: renewals hang in the kernel (or, cut only on
    // the way in, land without an answer). The suite asks on loopback.
    const bool hit = another_leads(ph, lease, l->label, t);
    if (hit)
        settle(ph.m_s.ttl_ms); // a follower while still cut off
    ph.hosts()->heal(host);
    if (hit) {
        // Cut only on the way in, its renewals still reach the server: the
        // grant may run one renew interval past what it recorded.
        const std::int64_t allow = way == cut_way::to_host ? ph.m_s.ttl_ms / 2 : 0;
        ph.record({kind, lease, t, mono_ns(), "", l->label, false, allow, 0});
    }
    return hit;
}

bool inject_netslow(phase& ph, const std::string& lease, const std::string& kind) {
    if (ph.disabled(kind))
        return false;
    auto l = ph.wait_leader(lease, 5000);
    if (!l)
        return false;
    const auto links = links_of(ph, l->label);
    if (links.empty())
        return false;
    using ms = tcp_relay::ms;
    const int ttl = ph.m_s.ttl_ms;
    for (tcp_relay* link : links)
        (void)link->take_slowed();
    const auto t = mono_ns();
    for (tcp_relay* link : links)
        if (kind == "netdelay")
            link->set_delay(ms{ttl * 3 / 2});
        else if (kind == "netjitter")
            link->set_delay(ms{ttl / 2}, ms{ttl});
    bool held = false;
    std::int64_t flip = t;
    auto flap = [&] {
        if (kind != "netflap" || mono_ns() < flip)
            return;
        held = !held;
        for (tcp_relay* link : links)
            held ? link->cut(true, true) : link->heal();
        flip = mono_ns() + std::int64_t{held ? ph.uniform(ttl / 2, ttl * 3 / 2)
                                             : ph.uniform(ttl / 10, ttl * 3 / 10)} *
                               1000000;
    };
    bool hit = another_leads(ph, lease, l->label, t, flap);
    if (hit)
        settle(ttl); // a follower while still slowed (or held)
    std::int64_t slowed = 0;
    for (tcp_relay* link : links) {
        link->heal();
        slowed += link->take_slowed();
    }
    hit = hit && slowed > 0;
    // Renewals that arrive late may extend the grant after its holder gave
    // it up: the next grant waits for that expiry.
    if (hit)
        ph.record({kind, lease, t, mono_ns(), "", l->label, false, std::int64_t{ttl} * 3 / 2, 0});
    return hit;
}

bool inject_netdown(phase& ph, const std::string& lease, const std::string& kind) {
    if (ph.disabled(kind))
        return false;
    auto l = ph.wait_leader(lease, 5000);
    if (!l)
        return false;
    tcp_relay* down = ph.down_relay_of(l->label);
    tcp_relay* store = ph.relay_of(l->label);
    if (down == nullptr || store == nullptr)
        return false;
    const int ttl = ph.m_s.ttl_ms;
    (void)down->take_slowed();
    (void)store->take_slowed();
    const auto t0 = mono_ns();
    down->cut(true, true);
    if (kind == "netdown-cut") {
        settle(ttl * 3); // past any write's bound (B1) and its slack
        const bool kept = same_process(valid_holder(ph, lease), l->label);
        down->heal();
        const bool hit = down->take_slowed() > 0;
        // No target: its lease is not meant to end (no step-down figure).
        if (hit)
            ph.record({kind, lease, t0, mono_ns(),
                       "leader " + l->label + (kept ? " kept its lease" : " lost its lease"), "",
                       false, 0, 0});
        return hit;
    }
    // netdown-stale: its downstream writes are held; then it is cut off.
    settle(ttl / 4);
    const auto t = mono_ns();
    store->cut(true, true);
    bool hit = another_leads(ph, lease, l->label, t);
    if (hit)
        settle(ttl); // the new leader raises the floor and writes there
    store->heal();
    down->heal();
    hit = hit && down->take_slowed() > 0;
    // As netslow: held renewals land after the heal.
    if (hit)
        ph.record({kind, lease, t, mono_ns(), "downstream held from ttl/4 before", l->label, false,
                   std::int64_t{ttl} * 3 / 2, 0});
    return hit;
}

} // namespace fault
