/// @file check_liveness.cpp
/// @brief Liveness as an invariant: per lease, every episode without a
/// valid grant, from the old grant's end (the reply of its last
/// acquire/renew that may have run + ttl, or its release) or from the end
/// of a fault that took the server away, to the next grant's reply, is at
/// most ttl + retry x 1.2 + takeover + margin (+ a fault's allowance, e.g.
/// a server clock stepped back), whenever a candidate campaigned in it.
/// Also the recovery figures (injection to the next successful call), and
/// "rejoin": a process a network fault cut off comes back, unrestarted.
#include "check_context.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace fault {

using nlohmann::json;

namespace {

std::string process_of(const std::string& identity) {
    return identity.substr(0, identity.find('.'));
}

struct term {
    std::string identity;
    std::int64_t epoch = 0, granted = 0, ends = 0;
};

/// The grants whose term was refused (a downstream floor could not be
/// raised): they led nothing, so the lease stays leaderless through them.
/// Only those grants: a refusal answers the worker's last grant of that
/// epoch with no term begun since, and the same worker may have led under
/// the same epoch before it (an acquire that extended its still-valid
/// grant after a step-down gets the epoch it had).
std::set<const json*> refused_grants(const check_context& c) {
    std::vector<const json*> in_time;
    for (const auto& r : c.b.history)
        if (r.contains("t") && r.contains("e"))
            in_time.push_back(&r);
    std::stable_sort(in_time.begin(), in_time.end(), [](const json* a, const json* b) {
        return (*a)["t"].get<std::int64_t>() < (*b)["t"].get<std::int64_t>();
    });
    std::map<std::tuple<std::string, std::string, std::int64_t>, const json*> awaiting;
    std::set<const json*> out;
    for (const json* r : in_time) {
        const std::string op = op_of(*r);
        const auto key =
            std::make_tuple(r->value("w", ""), r->value("L", ""), r->value("e", std::int64_t{0}));
        if (op == "acq" && res_of(*r) == "ok") {
            awaiting[key] = r;
        } else if (op == "start") {
            awaiting.erase(key);
        } else if (op == "refused") {
            if (const auto it = awaiting.find(key); it != awaiting.end()) {
                out.insert(it->second);
                awaiting.erase(it);
            }
        }
    }
    return out;
}

std::map<std::string, std::vector<term>> terms_per_lease(const check_context& c) {
    std::map<std::pair<std::string, std::int64_t>, term> terms;
    const std::set<const json*> refused = refused_grants(c);
    for (const auto& r : c.b.history) {
        const std::string op = op_of(r), res = res_of(r);
        if (!r.contains("t") || !r.contains("t0") || !r.contains("e"))
            continue;
        const std::int64_t t = r["t"], e = r["e"];
        const auto key = std::make_pair(r.value("L", ""), e);
        if (op == "acq" && res == "ok" && refused.count(&r) == 0) {
            auto [it, fresh] = terms.try_emplace(key, term{r["w"], e, t, t + c.ttl});
            it->second.granted = std::min(it->second.granted, t);
            it->second.ends = std::max(it->second.ends, t + c.ttl);
        } else if (op == "renew" && (res == "ok" || res == "fail")) {
            if (auto it = terms.find(key); it != terms.end())
                it->second.ends = std::max(it->second.ends, t + c.ttl);
        }
    }
    for (const auto& r : c.b.history)
        if (op_of(r) == "rel" && res_of(r) == "ok" && r.contains("t0"))
            if (auto it = terms.find({r.value("L", ""), r.value("e", std::int64_t{0})});
                it != terms.end())
                it->second.ends = std::min(it->second.ends, r["t"].get<std::int64_t>());
    // A holder killed between its grant's commit and the reply never
    // recorded it, yet the lease was held until that grant expired, at
    // most ttl after the kill: the term the kill hit is that long.
    for (const auto& f : c.faults)
        if (f.epoch != 0 && !f.lease.empty())
            terms.try_emplace({f.lease, f.epoch},
                              term{f.target + ".killed", f.epoch, f.t, f.t + c.ttl});
    std::map<std::string, std::vector<term>> out;
    for (const auto& [key, t] : terms)
        out[key.first].push_back(t);
    for (auto& [lease, ts] : out)
        std::sort(ts.begin(), ts.end(),
                  [](const term& a, const term& b) { return a.granted < b.granted; });
    return out;
}

void episode(check_context& c, const std::string& lease, const term& before, std::int64_t from,
             std::int64_t to, bool open) {
    std::int64_t start = from;
    std::int64_t allow = 0;
    std::string why = before.identity.empty() ? std::string{"the first acquire"}
                                              : "the end of " + before.identity + "'s grant";
    for (const auto& f : c.faults) {
        if (f.t > to || (!f.lease.empty() && f.lease != lease))
            continue;
        // A fault that took the server away excuses the time until it ended,
        // or until the grant if that came first (the harness marks the end
        // of a failover late when the machine is loaded).
        if (f.blocks_service && f.end >= start && f.t <= to) {
            start = std::min(f.end, to);
            why = "the end of " + f.kind;
        }
        if (f.end + 2 * c.ttl + f.allow_ms * 1000000 >= from)
            allow = std::max(allow, f.allow_ms * 1000000);
    }
    if (start > c.b.end - c.bound)
        return; // the workers were being stopped
    // A candidate campaigned: another process sent an acquire in it.
    bool candidate = false;
    for (const auto& r : c.b.history)
        if (op_of(r) == "acq" && r.value("L", "") == lease && r.contains("t0") &&
            process_of(r.value("w", "")) != process_of(before.identity)) {
            const std::int64_t t0 = r["t0"];
            if (t0 >= from - 2 * c.ttl && t0 <= to) {
                candidate = true;
                break;
            }
        }
    if (!candidate)
        return;
    const std::int64_t leaderless = to - start;
    auto& k = c.at(lease, start);
    k.longest_leaderless_ms =
        std::max(k.longest_leaderless_ms, static_cast<double>(leaderless) / 1e6);
    if (leaderless > c.bound + allow)
        c.violation("liveness",
                    lease + " had no leader for " + std::to_string(leaderless / 1000000) +
                        " ms from " + why + " (" + c.ms(start) + " ms) to " +
                        (open ? "the end of the phase" : "the next grant") + " while candidates " +
                        "campaigned; bound " + std::to_string((c.bound + allow) / 1000000) + " ms",
                    lease, to);
}

/// Each process a network fault cut off comes back without a restart: an
/// acquire it sent after the heal was answered (granted or not) within
/// 5 x ttl of it, unless the phase ended first.
void rejoins(check_context& c) {
    for (const auto& f : c.faults) {
        if (f.target.empty() || f.kind.rfind("net", 0) != 0 || f.end + 5 * c.ttl > c.b.end)
            continue;
        const bool back = std::any_of(c.b.history.begin(), c.b.history.end(), [&](const json& r) {
            const std::string res = res_of(r);
            return op_of(r) == "acq" && r.contains("t0") && r.contains("t") &&
                   process_of(r.value("w", "")) == f.target && r["t0"] >= f.end &&
                   r["t"] <= f.end + 5 * c.ttl && (res == "ok" || res == "no");
        });
        if (!back)
            c.violation("rejoin",
                        f.target + " (cut off by " + f.kind + " until " + c.ms(f.end) +
                            " ms) had no acquire answered within 5 x ttl of the heal",
                        f.lease, f.end, {f.target});
    }
}

void recovery(check_context& c) {
    std::vector<std::pair<std::int64_t, const json*>> ok;
    std::int64_t last = 0;
    for (const auto& r : c.b.history) {
        const std::string op = op_of(r);
        if ((op == "acq" || op == "renew") && res_of(r) == "ok" && r.contains("t0"))
            ok.emplace_back(r["t0"].get<std::int64_t>(), &r);
        last = std::max(last, r.value("t", std::int64_t{0}));
    }
    std::sort(ok.begin(), ok.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& f : c.faults) {
        if (f.t > last - 2 * c.ttl)
            continue;
        auto it = std::lower_bound(ok.begin(), ok.end(), f.t,
                                   [](const auto& a, std::int64_t t) { return a.first < t; });
        std::int64_t best = -1;
        for (int seen = 0; it != ok.end() && seen < 64; ++it) {
            const json& r = *it->second;
            if (!f.lease.empty() && r.value("L", "") != f.lease)
                continue;
            ++seen;
            const std::int64_t d = r["t"].get<std::int64_t>() - f.t;
            if (best < 0 || d < best)
                best = d;
        }
        if (best >= 0)
            c.report.kinds[f.kind].recovery_ms.push_back(static_cast<double>(best) / 1e6);
    }
}

} // namespace

void check_liveness(check_context& c) {
    // The phase's start counts as the end of a grant held by nobody: from
    // the first acquire sent for a lease to its first grant is an episode.
    std::map<std::string, std::int64_t> first_try;
    for (const auto& r : c.b.history)
        if (op_of(r) == "acq" && r.contains("t0")) {
            const std::string lease = r.value("L", "");
            const std::int64_t t0 = r["t0"];
            if (!first_try.count(lease) || t0 < first_try[lease])
                first_try[lease] = t0;
        }
    auto per_lease = terms_per_lease(c);
    for (const auto& [lease, t0] : first_try) {
        auto& terms = per_lease[lease];
        terms.insert(terms.begin(), term{"", 0, t0, t0});
    }
    for (const auto& [lease, terms] : per_lease) {
        std::int64_t covered = terms.front().ends;
        const term* holder = &terms.front();
        for (std::size_t i = 1; i < terms.size(); ++i) {
            if (terms[i].granted > covered)
                episode(c, lease, *holder, covered, terms[i].granted, false);
            if (terms[i].ends > covered || terms[i].granted > covered)
                holder = &terms[i];
            covered = std::max(covered, terms[i].ends);
        }
        if (covered < c.b.end)
            episode(c, lease, *holder, covered, c.b.end, true);
    }
    recovery(c);
    rejoins(c);
}

namespace {

// I6, the other half: a transaction stopped inside (pause-in-txn) for
// longer than ttl + takeover + margin, so its lease expired and was taken
// over, never commits: the takeover ended it.
void stalled_txns(check_context& c) {
    std::set<std::pair<std::string, std::int64_t>> present;
    for (const auto& w : c.b.writes)
        present.emplace(w.worker, w.seq);
    const std::int64_t long_enough = c.bound; // expiry, a retry, the takeover, a margin
    for (const auto& r : c.b.history) {
        if (op_of(r) != "hook" || !r.contains("s"))
            continue;
        const std::string label = r.value("w", ""), lease = r.value("L", "");
        const std::int64_t t = r["t"], seq = r["s"];
        for (const auto& f : c.faults)
            if (f.kind == "pause-in-txn" && f.target == label && f.t >= t && f.t - t < c.ttl &&
                f.end - t >= long_enough && present.count({label, seq}))
                c.violation("I6",
                            "transaction " + label + "#" + std::to_string(seq) + " stopped for " +
                                std::to_string((f.end - t) / 1000000) +
                                " ms inside its fenced transaction committed",
                            lease, f.end, {label});
    }
}

} // namespace

// I6: a leader's fenced transaction of several ttl, while its elector
// renews, commits, and no one else is granted the lease meanwhile, and the
// leader never stops observing held(); a stalled one never commits.
void check_long_txns(check_context& c) {
    stalled_txns(c);
    for (const auto& r : c.b.history) {
        if (op_of(r) != "long" || !r.contains("t0"))
            continue;
        const std::string id = r.value("w", ""), lease = r.value("L", "");
        const std::int64_t t0 = r["t0"], t = r["t"];
        const std::int64_t e = r.value("e", std::int64_t{0});
        const std::string what = "fenced transaction of " + std::to_string((t - t0) / 1000000) +
                                 " ms by " + id + " (epoch " + std::to_string(e) + ")";
        if (res_of(r) != "ok")
            c.violation("I6", what + " did not commit: " + r.value("x", ""), lease, t, {id});
        for (const auto& g : c.b.history)
            if (op_of(g) == "acq" && res_of(g) == "ok" && g.value("L", "") == lease &&
                g.value("e", std::int64_t{0}) != e && g["t"].get<std::int64_t>() > t0 &&
                g["t"].get<std::int64_t>() < t) {
                c.violation("I6",
                            what + ": " + g.value("w", "") + " was granted epoch " +
                                std::to_string(g.value("e", std::int64_t{0})) + " while it ran",
                            lease, g["t"].get<std::int64_t>(), {id, g.value("w", "")});
                break;
            }
        for (const auto& h : c.b.history)
            if (op_of(h) == "held" && h.value("w", "") == id && !h.value("v", true) &&
                h.value("tl", std::int64_t{0}) >= t0 && h.value("tl", std::int64_t{0}) < t) {
                c.violation("I6", what + ": its process stopped observing held() while it ran",
                            lease, h["t"].get<std::int64_t>(), {id});
                break;
            }
    }
}

} // namespace fault
