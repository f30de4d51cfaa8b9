/// @file check_downstream.cpp
/// @brief I2d: in the downstream database, no write with a token below a
/// floor commits after the raise of that floor (downstream.hpp: both carry
/// their place in the downstream's commit order). And the downstream
/// phase's own floors: floors were raised, and stale downstream writes were
/// refused, so the invariant was put to the test.
#include "check_context.hpp"

#include <algorithm>
#include <map>

namespace fault {

void check_downstream(check_context& c) {
    const auto& b = c.b;
    if (b.downstream_writes.empty() && b.raises.empty())
        return; // not a downstream phase
    std::map<std::string, std::vector<const db_raise*>> per_lease;
    for (const auto& r : b.raises)
        per_lease[r.lease].push_back(&r);
    for (auto& [lease, rs] : per_lease)
        std::sort(rs.begin(), rs.end(),
                  [](const db_raise* x, const db_raise* y) { return x->ord < y->ord; });
    for (const auto& w : b.downstream_writes) {
        std::int64_t floor = 0;
        for (const db_raise* r : per_lease[w.lease]) {
            if (r->ord >= w.ord)
                break;
            floor = std::max(floor, r->epoch);
        }
        if (w.ord < 0 || w.epoch < floor)
            c.violation("I2d",
                        "downstream write " + w.worker + "#" + std::to_string(w.seq) +
                            " with epoch " + std::to_string(w.epoch) + " committed (order " +
                            std::to_string(w.ord) + ") after the floor was raised to " +
                            std::to_string(floor),
                        w.lease, 0, {w.worker});
    }
    long refused = 0;
    for (const auto& r : b.history)
        if (op_of(r) == "write" && res_of(r) == "ref" && r.value("d", false))
            ++refused;
    if (b.raises.size() < 2)
        c.violation("floor",
                    "only " + std::to_string(b.raises.size()) +
                        " raises of a downstream floor: the phase did not change leaders there",
                    "", 0);
    if (refused < 1)
        c.violation("floor", "no downstream write was refused: no stale leader reached the floor",
                    "", 0);
}

} // namespace fault
