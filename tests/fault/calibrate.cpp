/// @file calibrate.cpp
/// @brief The server's session set-up rate and a storm's stretch (see
/// calibrate.hpp).
#include "calibrate.hpp"

#include "common.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <cmath>
#include <iostream>
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

double stretch_storm(settings& fleet, const std::string& conninfo, int workers,
                     const std::string& name) {
    const double cost = connect_cost_ms(conninfo, 15);
    const double cycle = 1.65 * fleet.ttl_ms + 250; // mean hold + pause
    const double stretch = churn_stretch(workers, cycle, cost);
    std::cout << "  " << name << ": a session costs the server " << cost << " ms ("
              << static_cast<int>(1000 / cost) << "/s); " << workers << " contenders ask "
              << static_cast<int>(workers * 1000 / cycle) << "/s; time stretched x" << stretch
              << std::endl;
    const auto slow = [stretch](int ms) { return static_cast<int>(ms * stretch); };
    fleet.ttl_ms = slow(fleet.ttl_ms);
    fleet.renew_deadline_ms = slow(fleet.renew_deadline_ms);
    fleet.retry_ms = slow(fleet.retry_ms);
    return stretch;
}

bool churn_stretch_self_test() {
    struct example {
        const char* name;
        int workers;
        double cycle_ms, cost_ms, want;
    };
    // 40 sessions a second (25 ms each) allow 10 a second for a storm.
    const example examples[] = {
        {"16 contenders, 10 ms sessions: no stretch", 16, 2000, 10, 1},
        {"64 contenders asking 20/s of 10 allowed: x2", 64, 3200, 25, 2},
        {"200 contenders asking 100/s of 10 allowed: capped at x4", 200, 2000, 25, 4},
        {"nothing measured: no stretch", 64, 2000, 0, 1},
    };
    bool ok = true;
    for (const example& e : examples) {
        const double got = churn_stretch(e.workers, e.cycle_ms, e.cost_ms);
        const bool pass = std::fabs(got - e.want) < 1e-9;
        std::cout << (pass ? "ok      " : "FAILED  ") << "churn_stretch: " << e.name << ", got x"
                  << got << "\n";
        ok = ok && pass;
    }
    return ok;
}

} // namespace fault
