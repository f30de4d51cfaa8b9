/// @file nemesis_handover.cpp
/// @brief A planned handover as the suite's nemesis sees it: the leader is
/// asked to yield_to another campaigning worker, which must then hold the
/// lease with a new epoch. Not a fault, a path of its own that the
/// invariants watch: one durable commit (the holder's lease_handover), the
/// successor confirming it by a read (checked as the phase's by_read floor).
#include "nemesis.hpp"

#include "common.hpp"
#include "single_phase.hpp"
#include "worker.hpp"

#include <signal.h>

#include <fstream>

namespace fault {
namespace {

/// The identity a live worker on @p lease other than @p besides campaigns
/// with now (worker.hpp's <history>.id), picked at random; "" if none.
std::string other_candidate(phase& ph, const std::string& lease, const std::string& besides) {
    std::vector<std::string> ids;
    for (const auto& w : ph.workers(lease)) {
        std::string id;
        std::ifstream{w.history + ".id"} >> id;
        if (w.label != besides && !id.empty())
            ids.push_back(id);
    }
    return ids.empty() ? std::string{} : ph.pick(ids);
}

} // namespace

bool inject_handover(phase& ph, const std::string& lease) {
    if (ph.disabled("handover"))
        return false;
    const auto l = ph.wait_leader(lease, 5000);
    if (!l)
        return false;
    const std::string successor = other_candidate(ph, lease, l->label);
    if (successor.empty())
        return false;
    std::int64_t t = 0;
    for (const auto& w : ph.workers(lease))
        if (w.label == l->label) {
            std::ofstream{w.history + ".handover", std::ios::trunc} << successor << "\n";
            t = mono_ns();
            kill(w.pid, handover_signal());
        }
    if (t == 0)
        return false;
    // Effective when the successor holds a newer grant: the handover's (or,
    // had it failed, one it took over; the checker tells them apart).
    const auto end = t + std::int64_t{ph.m_s.ttl_ms} * 5000000;
    while (mono_ns() < end && !interrupted()) {
        if (const auto now = ph.leader(lease); now && now->identity == successor) {
            if (now->epoch <= l->epoch)
                return false;
            ph.record({"handover", lease, t, mono_ns(), "to " + successor, l->label, false, 0});
            return true;
        }
        sleep_ms(5);
    }
    return false;
}

single handover_phase(int planned, int ttl_ms) {
    single d{"handover",
             {{"handover", planned}},
             floors({{"handover", planned}}, planned, 50, 0),
             false,
             [planned, ttl_ms](phase& ph) {
                 until_effective(planned, [&](int) {
                     const bool hit = inject_handover(ph, "l0");
                     settle(ttl_ms + ph.uniform(0, 500));
                     return hit;
                 });
             }};
    d.floors.by_read = planned / 2;
    return d;
}

} // namespace fault
