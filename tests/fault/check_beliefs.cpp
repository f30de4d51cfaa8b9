/// @file check_beliefs.cpp
/// @brief I4 on what the client library told each process.
///
/// A worker samples elector::leading() (held() of the lease) every few ms
/// and records transitions: `held` v=true with t = the time read *after*
/// the first true sample; heartbeats while true with t = a time read
/// *before* a true sample; v=false with tl = the time read before the last
/// true sample. So the process believed it led throughout [begin, end] of
/// each recorded interval, whatever the scheduling delays: two intervals of
/// different processes that intersect are two processes believing at one
/// instant. The callbacks (started leading .. the stop token firing) are
/// compared the same way and counted, not failed: a process that was
/// paused wakes up with its stop token not yet fired, which is exactly
/// what held() (no I/O, steady clock) is there to answer.
#include "check_context.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace fault {

using nlohmann::json;

namespace {

struct interval {
    std::string identity, lease;
    std::int64_t epoch = 0, begin = 0, end = 0;
};

std::vector<interval> held_intervals(const check_context& c) {
    std::map<std::string, std::vector<const json*>> per_identity;
    for (const auto& r : c.b.history)
        if (op_of(r) == "held")
            per_identity[r.value("w", "")].push_back(&r);
    std::vector<interval> out;
    for (auto& [id, rs] : per_identity) {
        std::stable_sort(rs.begin(), rs.end(), [](const json* a, const json* b) {
            return (*a)["t"].get<std::int64_t>() < (*b)["t"].get<std::int64_t>();
        });
        std::optional<interval> cur;
        for (const json* r : rs) {
            const std::int64_t t = (*r)["t"], e = r->value("e", std::int64_t{0});
            if ((*r)["v"].get<bool>()) {
                if (cur && cur->epoch != e) {
                    out.push_back(*cur);
                    cur.reset();
                }
                if (!cur)
                    cur = interval{id, (*r)["L"], e, t, t};
                cur->end = std::max(cur->end, t);
            } else if (cur) {
                cur->end = std::max(cur->end, r->value("tl", cur->end));
                out.push_back(*cur);
                cur.reset();
            }
        }
        if (cur)
            out.push_back(*cur);
    }
    return out;
}

std::vector<interval> callback_intervals(const check_context& c) {
    std::map<std::string, std::vector<const json*>> per_identity;
    std::map<std::string, std::int64_t> last_seen; // per process: it was killed after that
    for (const auto& r : c.b.history) {
        const std::string op = op_of(r);
        const std::string w = r.value("w", "");
        auto& l = last_seen[w.substr(0, w.find('.'))];
        l = std::max(l, r.value("t", std::int64_t{0}));
        if (op == "start" || op == "unlead")
            per_identity[r.value("w", "")].push_back(&r);
    }
    std::vector<interval> out;
    for (auto& [id, rs] : per_identity) {
        std::stable_sort(rs.begin(), rs.end(), [](const json* a, const json* b) {
            return (*a)["t"].get<std::int64_t>() < (*b)["t"].get<std::int64_t>();
        });
        std::optional<interval> cur;
        for (const json* r : rs) {
            const std::int64_t t = (*r)["t"];
            if (op_of(*r) == "start") {
                if (cur)
                    out.push_back(*cur);
                cur = interval{id, (*r)["L"], r->value("e", std::int64_t{0}), t,
                               last_seen[id.substr(0, id.find('.'))]};
            } else if (cur) {
                cur->end = t;
                out.push_back(*cur);
                cur.reset();
            }
        }
        if (cur)
            out.push_back(*cur);
    }
    return out;
}

/// Calls @p on_overlap(earlier, later) for every interval that begins
/// before another process's interval on the same lease has ended.
template <typename F>
void overlaps(std::vector<interval> is, F&& on_overlap) {
    std::map<std::string, std::vector<const interval*>> per_lease;
    for (const auto& i : is)
        per_lease[i.lease].push_back(&i);
    for (auto& [lease, v] : per_lease) {
        std::sort(v.begin(), v.end(),
                  [](const interval* a, const interval* b) { return a->begin < b->begin; });
        const interval* reach = nullptr;
        for (const interval* i : v) {
            const auto proc = [](const std::string& id) { return id.substr(0, id.find('.')); };
            if (reach && proc(reach->identity) != proc(i->identity) && i->begin < reach->end)
                on_overlap(*reach, *i);
            if (!reach || i->end > reach->end)
                reach = i;
        }
    }
}

/// Per fault that hit a leading process: from the fault to its stop token
/// firing (the figure docs/safety.md gives for network faults).
void step_downs(check_context& c) {
    const auto calls = callback_intervals(c);
    for (const auto& f : c.faults) {
        if (f.target.empty())
            continue;
        for (const interval& i : calls)
            if (i.lease == f.lease && i.identity.substr(0, i.identity.find('.')) == f.target &&
                i.begin <= f.t && i.end >= f.t) {
                c.report.kinds[f.kind].stepdown_ms.push_back(static_cast<double>(i.end - f.t) /
                                                             1e6);
                break;
            }
    }
}

} // namespace

void check_beliefs(check_context& c) {
    overlaps(held_intervals(c), [&](const interval& a, const interval& b) {
        if (c.b.expect.overlaps_allowed) {
            ++c.at(b.lease, b.begin).allowed_overlaps;
            return;
        }
        c.violation("I4",
                    b.identity + " observed held() for " + b.lease + " (epoch " +
                        std::to_string(b.epoch) + ") at " + c.ms(b.begin) + " ms while " +
                        a.identity + " observed it (epoch " + std::to_string(a.epoch) + ") until " +
                        c.ms(a.end) + " ms",
                    b.lease, b.begin, {a.identity, b.identity});
    });
    overlaps(callback_intervals(c), [&](const interval&, const interval& b) {
        ++c.at(b.lease, b.begin).callback_overlaps;
    });
    step_downs(c);
}

} // namespace fault
