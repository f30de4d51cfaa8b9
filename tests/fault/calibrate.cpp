/// @file calibrate.cpp
/// @brief The server's session set-up rate and a storm's stretch (see
/// calibrate.hpp).
#include "calibrate.hpp"

#include "common.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <vector>

namespace fault {

double connect_cost_ms(const std::string& conninfo, int n) {
    std::vector<double> ms;
    for (int i = 0; i < n; ++i) {
        const auto t0 = mono_ns();
        {
            pqxx::connection c{conninfo};
            pqxx::nontransaction tx{c};
            tx.exec("SELECT 1");
        }
        ms.push_back(static_cast<double>(mono_ns() - t0) / 1e6);
    }
    std::sort(ms.begin(), ms.end());
    return ms.empty() ? 0 : ms[ms.size() / 2];
}

double churn_stretch(int workers, double cycle_ms, double cost_ms) {
    if (workers <= 0 || cycle_ms <= 0 || cost_ms <= 0)
        return 1;
    const double asked = workers * 1000.0 / cycle_ms; // sessions a second
    const double budget = 1000.0 / cost_ms / 4;
    return std::clamp(asked / budget, 1.0, 4.0);
}

} // namespace fault
