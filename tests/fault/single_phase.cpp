/// @file single_phase.cpp
/// @brief One cluster, one lease, three workers (see single_phase.hpp).
#include "single_phase.hpp"

#include "cluster.hpp"

#include <fstream>

namespace fault {

int until_effective(int planned, const std::function<bool(int)>& inject) {
    int effective = 0;
    for (int attempt = 0; effective < planned && attempt < 2 * planned + 2 && !interrupted();
         ++attempt)
        if (inject(effective))
            ++effective;
    return effective;
}

phase_bundle run_single(const settings& s, std::mt19937& rng, const single& def) {
    phase ph{s, def.name, rng};
    if (def.hosts)
        ph.use_hosts(3);
    if (def.relays)
        ph.use_relays(3);
    ph.bound_writes(def.write_bound_ms);
    ph.start_primary({"l0"}, def.faketime);
    if (def.downstream)
        ph.add_downstream();
    if (def.faketime)
        ph.set_worker_env({std::string{"LD_PRELOAD="} + faketime_lib, "FAKETIME_NO_CACHE=1",
                           "FAKETIME_DONT_FAKE_MONOTONIC=1",
                           "FAKETIME_TIMESTAMP_FILE=" + ph.dir() + "/worker_clock"});
    {
        std::ofstream out{ph.dir() + "/worker_clock"};
        out << "+0\n";
    }
    for (int i = 0; i < 3; ++i)
        ph.spawn_worker("l0", false);
    ph.wait_leader("l0", 15000);
    def.body(ph);
    settle(2 * s.ttl_ms);
    phase_expectations ex;
    ex.server_clock_stepped = def.faketime;
    ex.overlaps_allowed = def.faketime;
    return ph.finish(ex, def.floors, def.planned);
}

phase_floors floors(std::map<std::string, int> effective, long grants, long acked, long refused) {
    return {std::move(effective), grants, acked, refused};
}

} // namespace fault
