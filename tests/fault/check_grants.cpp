/// @file check_grants.cpp
/// @brief I1 (an epoch is granted at most once; grants increase) and I5
/// (no renew revives an expired lease), on the database and on the
/// histories.
#include "check_context.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace fault {

using nlohmann::json;

namespace {

bool is_grant_event(const std::string& e) {
    return e == "acquired" || e == "takeover" || e == "handover";
}

// Per lease, grants in commit (id) order have strictly increasing epochs;
// no epoch appears in two grant events at all.
void grants_in_database(check_context& c) {
    std::map<std::string, std::int64_t> last;
    std::map<std::int64_t, const db_event*> seen;
    for (const auto& e : c.b.events) {
        if (!is_grant_event(e.event))
            continue;
        if (auto it = last.find(e.lease); it != last.end() && e.epoch <= it->second)
            c.violation("I1",
                        "lease_events id " + std::to_string(e.id) + " grants epoch " +
                            std::to_string(e.epoch) + " of " + e.lease + " after epoch " +
                            std::to_string(it->second),
                        e.lease, 0);
        last[e.lease] = std::max(last[e.lease], e.epoch);
        if (auto [it, fresh] = seen.emplace(e.epoch, &e); !fresh)
            c.violation("I1",
                        "epoch " + std::to_string(e.epoch) +
                            " granted twice in lease_events (ids " +
                            std::to_string(it->second->id) + " to " + it->second->holder + " and " +
                            std::to_string(e.id) + " to " + e.holder + ")",
                        e.lease, 0);
    }
}

struct grant {
    std::string identity, lease;
    std::int64_t epoch, t0, t;
    bool by_read; ///< a successor's read confirmed it (a handover's grant)
};

// Keyed by (lease, epoch): an epoch acknowledged to two identities is
// granted twice. In real time, a grant whose request was sent after
// another grant's reply arrived carries a larger epoch (catches reissue
// across an asynchronous failover, where lease_events lost the old grants).
void grants_in_history(check_context& c) {
    std::map<std::pair<std::string, std::int64_t>, grant> first;
    for (const auto& r : c.b.history) {
        if (op_of(r) != "acq" || res_of(r) != "ok")
            continue;
        grant g{r["w"], r["L"], r["e"], r["t0"], r["t"], r.value("via", "") == "read"};
        auto key = std::make_pair(g.lease, g.epoch);
        auto it = first.find(key);
        if (it == first.end()) {
            first.emplace(key, g);
        } else if (it->second.identity != g.identity) {
            c.violation("I1",
                        "epoch " + std::to_string(g.epoch) + " of " + g.lease +
                            " acknowledged to " + it->second.identity + " and to " + g.identity,
                        g.lease, std::max(g.t, it->second.t), {g.identity, it->second.identity});
            if (g.t < it->second.t)
                it->second = g;
        } else if (g.t < it->second.t) {
            it->second = g;
        }
    }
    std::map<std::string, std::vector<const grant*>> per_lease;
    for (const auto& [key, g] : first) {
        per_lease[g.lease].push_back(&g);
        ++c.at(g.lease, g.t).grants;
        if (g.by_read)
            ++c.at(g.lease, g.t).by_read;
    }
    for (auto& [lease, gs] : per_lease) {
        auto by_reply = gs;
        std::sort(by_reply.begin(), by_reply.end(),
                  [](const grant* a, const grant* b) { return a->t < b->t; });
        auto by_send = gs;
        std::sort(by_send.begin(), by_send.end(),
                  [](const grant* a, const grant* b) { return a->t0 < b->t0; });
        std::size_t i = 0;
        const grant* max_before = nullptr;
        for (const grant* g : by_send) {
            while (i < by_reply.size() && by_reply[i]->t < g->t0) {
                if (!max_before || by_reply[i]->epoch > max_before->epoch)
                    max_before = by_reply[i];
                ++i;
            }
            if (max_before && max_before->epoch >= g->epoch)
                c.violation("I1",
                            g->identity + " was granted epoch " + std::to_string(g->epoch) +
                                " by a request sent after " + max_before->identity +
                                " had been granted epoch " + std::to_string(max_before->epoch),
                            lease, g->t, {g->identity, max_before->identity});
        }
    }
}

// Per identity and epoch: the latest instant the server can have held the
// grant valid is the reply of its last acquire/renew that may have run
// (acknowledged, or failed: it may have run) + ttl, or a release's reply.
// A success of that epoch sent after that instant brought an ended grant
// back: a renew that did so breaks I5, an acquire granted the epoch again
// (I1, "to the same identity").
void revivals(check_context& c) {
    if (c.b.expect.server_clock_stepped)
        return; // a server clock stepped back makes grants last longer
    const std::int64_t tol = 20000000;
    std::map<std::string, std::vector<const json*>> per_identity;
    for (const auto& r : c.b.history) {
        const std::string op = op_of(r);
        if ((op == "acq" || op == "renew" || (op == "rel" && r.contains("t0"))) && r.contains("t"))
            per_identity[r.value("w", "")].push_back(&r);
    }
    for (auto& [id, rs] : per_identity) {
        std::stable_sort(rs.begin(), rs.end(),
                         [](const json* a, const json* b) { return time_of(*a) < time_of(*b); });
        std::map<std::int64_t, std::int64_t> valid_until; // per epoch
        std::optional<std::int64_t> current;              // epoch of the latest grant
        for (const json* r : rs) {
            const std::string op = op_of(*r), res = res_of(*r);
            const std::int64_t t0 = (*r)["t0"], t = (*r)["t"];
            const std::int64_t e = r->value("e", std::int64_t{0});
            const std::string lease = r->value("L", "");
            if (res == "ok" && (op == "acq" || op == "renew")) {
                if (auto it = valid_until.find(e);
                    it != valid_until.end() && t0 > it->second + tol) {
                    if (op == "renew")
                        c.violation("I5",
                                    id + " renewed epoch " + std::to_string(e) +
                                        " by a request sent " +
                                        std::to_string((t0 - it->second) / 1000000) +
                                        " ms after that grant had ended (expired or released)",
                                    lease, t, {id});
                    else
                        c.violation("I1",
                                    "epoch " + std::to_string(e) + " granted again to " + id +
                                        " by a request sent " +
                                        std::to_string((t0 - it->second) / 1000000) +
                                        " ms after its grant had ended",
                                    lease, t, {id});
                }
                valid_until[e] = std::max(valid_until[e], t + c.ttl);
                if (op == "acq")
                    current = e;
            } else if (res == "fail" && op == "renew") {
                if (valid_until.count(e))
                    valid_until[e] = std::max(valid_until[e], t + c.ttl);
            } else if (res == "fail" && op == "acq" && current) {
                valid_until[*current] = std::max(valid_until[*current], t + c.ttl);
            } else if (op == "rel" && res == "ok" && valid_until.count(e)) {
                valid_until[e] = t;
            }
        }
    }
}

// Each handover's latency: from the holder's yield_to() to the reply that
// gave the successor the handed-over epoch (its read, or its acquire).
void handovers(check_context& c) {
    for (const auto& y : c.b.history) {
        if (op_of(y) != "yield" || res_of(y) != "ok")
            continue;
        const std::int64_t t0 = y["t0"], epoch = y.value("ne", std::int64_t{0});
        std::int64_t first = 0;
        for (const auto& r : c.b.history)
            if (op_of(r) == "acq" && res_of(r) == "ok" && r.value("e", std::int64_t{0}) == epoch &&
                r.value("w", "") == y.value("to", "") && (first == 0 || r["t"] < first))
                first = r["t"];
        if (first != 0)
            c.at(y.value("L", ""), t0).handover_ms.push_back(static_cast<double>(first - t0) / 1e6);
    }
}

} // namespace

void check_grants(check_context& c) {
    grants_in_database(c);
    grants_in_history(c);
    revivals(c);
    handovers(c);
}

} // namespace fault
