/// @file check_writes.cpp
/// @brief I2 (no stale write commits), I3 (acknowledged work is there,
/// refused, failed and rolled-back work is not, transactions are atomic)
/// and B1 (a write with a time bound ended by it).
///
/// Order of writes and grants: every fw_<lease> row gets its place in
/// fault_order from a deferred constraint trigger at COMMIT (while the
/// fence's lock on the lease row is still held), lease_events rows from an
/// AFTER INSERT trigger (while the lease row is locked for the grant): a
/// fenced write and a grant of the same lease hold conflicting locks from
/// the draw to their commit, so between them the order is commit order.
#include "check_context.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace fault {

using nlohmann::json;

namespace {

using write_key = std::pair<std::string, std::int64_t>; // worker label, seq

void stale_writes(check_context& c, const std::map<write_key, const json*>& invoked) {
    std::map<std::string, std::vector<const db_event*>> per_lease;
    for (const auto& e : c.b.events)
        per_lease[e.lease].push_back(&e);
    for (auto& [lease, es] : per_lease)
        std::sort(es.begin(), es.end(),
                  [](const db_event* a, const db_event* b) { return a->ord < b->ord; });
    for (const auto& w : c.b.writes) {
        std::int64_t t = 0;
        if (auto it = invoked.find({w.worker, w.seq}); it != invoked.end())
            t = (*it->second)["t"].get<std::int64_t>();
        // The lease's state at the write's commit: the last event before it.
        std::int64_t current = 0;
        bool freed = false;
        for (const db_event* e : per_lease[w.lease]) {
            if (e->ord >= w.ord)
                break;
            if (e->event == "acquired" || e->event == "takeover" || e->event == "handover") {
                current = e->epoch;
                freed = false;
            } else if (e->epoch == current) {
                freed = true; // released, revoked, evicted
            }
        }
        if (w.ord < 0 || current != w.epoch || freed)
            c.violation("I2",
                        "write " + w.worker + "#" + std::to_string(w.seq) + " with epoch " +
                            std::to_string(w.epoch) + " committed (order " + std::to_string(w.ord) +
                            ") when the grant of record was " + std::to_string(current) +
                            (freed ? " (no longer valid)" : ""),
                        w.lease, t, {w.worker});
    }
}

void outcomes(check_context& c, const std::map<write_key, const json*>& outcome,
              const std::set<write_key>& present) {
    for (const auto& [key, r] : outcome) {
        const std::string res = res_of(*r);
        const std::string lease = r->value("L", "");
        const std::int64_t t = r->value("t", (*r)["t0"].get<std::int64_t>());
        const bool in_db = present.count(key) != 0;
        auto& k = c.at(lease, t);
        if (res == "ref")
            ++k.refused;
        if (res == "unk")
            ++k.unknown;
        if (res == "ok")
            ++k.acked;
        if (res == "ok" && !in_db) {
            ++k.acked_lost;
            if (!c.b.expect.lost_acks_allowed)
                c.violation("I3",
                            "acknowledged write " + key.first + "#" + std::to_string(key.second) +
                                " is missing",
                            lease, t, {key.first});
        }
        if ((res == "ref" || res == "fail") && in_db)
            c.violation("I3",
                        "write " + key.first + "#" + std::to_string(key.second) + " was " +
                            (res == "ref" ? "refused" : "failed") + " but is present",
                        lease, t, {key.first});
    }
}

// Statements of one transaction are all or nothing: COPY'd scratch rows
// belong to a committed transaction, rows inserted inside a rolled-back
// savepoint are absent, and each worker's counter (fenced UPDATE) equals
// the number of its committed transactions that ran the UPDATE.
void atomicity(check_context& c, const std::set<write_key>& present) {
    std::map<std::pair<std::string, std::string>, std::int64_t> updates; // (lease, worker)
    for (const auto& w : c.b.writes)
        if (w.ops.find('u') != std::string::npos)
            ++updates[{w.lease, w.worker}];
    for (const auto& s : c.b.scratch) {
        if (s.rolled_back)
            c.violation("I3",
                        "row of " + s.worker + "#" + std::to_string(s.seq) +
                            " inserted in a savepoint that was rolled back is present",
                        s.lease, 0);
        else if (!present.count({s.worker, s.seq}))
            c.violation("I3",
                        "COPY row of " + s.worker + "#" + std::to_string(s.seq) +
                            " is present but its transaction did not commit",
                        s.lease, 0);
    }
    for (const auto& k : c.b.counters) {
        const std::int64_t expected = updates[{k.lease, k.worker}];
        if (k.n != expected)
            c.violation("I3",
                        "counter of " + k.worker + " on " + k.lease + " is " + std::to_string(k.n) +
                            " but " + std::to_string(expected) +
                            " committed transactions ran its fenced UPDATE",
                        k.lease, 0);
    }
}

// B1: a fenced transaction with a time bound (the network phases' writes)
// ended by it: run_fenced() promises its timeout + 0.5 s whatever the
// network does; 1 s more for a loaded machine's scheduling. (netdown-cut
// holds a link for 3 x ttl, well past that: an unbounded write shows.)
void bounds(check_context& c, const std::map<write_key, const json*>& outcome) {
    constexpr std::int64_t slack_ns = 1500000000;
    for (const auto& [key, r] : outcome) {
        const std::int64_t bound_ms = r->value("b", std::int64_t{0});
        if (bound_ms <= 0 || !r->contains("t"))
            continue;
        const std::int64_t took = (*r)["t"].get<std::int64_t>() - (*r)["t0"].get<std::int64_t>();
        if (took > bound_ms * 1000000 + slack_ns)
            c.violation("B1",
                        "write " + key.first + "#" + std::to_string(key.second) + " took " +
                            std::to_string(took / 1000000) + " ms against its bound of " +
                            std::to_string(bound_ms) + " ms",
                        r->value("L", ""), (*r)["t0"].get<std::int64_t>(), {key.first});
    }
}

} // namespace

void check_writes(check_context& c) {
    std::map<write_key, const json*> outcome, invoked;
    for (const auto& r : c.b.history) {
        if (op_of(r) != "write")
            continue;
        write_key key{r["w"].get<std::string>(), r["s"].get<std::int64_t>()};
        if (r.value("ph", "") == "inv")
            invoked[key] = &r;
        else
            outcome[key] = &r;
    }
    std::set<write_key> present;
    for (const auto& w : c.b.writes)
        present.emplace(w.worker, w.seq);
    stale_writes(c, invoked);
    outcomes(c, outcome, present);
    atomicity(c, present);
    bounds(c, outcome);
}

} // namespace fault
