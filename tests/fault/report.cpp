/// @file report.cpp
/// @brief Text and JSON reports.
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace fault {
namespace {

using nlohmann::json;

double percentile(std::vector<double> v, double q) {
    if (v.empty())
        return NAN;
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
}

long total(const std::map<std::string, long>& m) {
    long n = 0;
    for (const auto& [k, v] : m)
        n += v;
    return n;
}

std::string fixed0(double v) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(0) << v;
    return o.str();
}

} // namespace

int print_report(const settings& s, const std::vector<checked_phase>& phases) {
    std::cout << "\nfault-injection results: profile " << s.profile << ", seed " << s.seed
              << ", ttl " << s.ttl_ms << " ms, retry " << s.retry_ms << " ms, takeover "
              << s.takeover_ms << " ms\n\n";
    std::cout << "| phase | fault kind | planned | effective | grants | acknowledged | refused | "
                 "violations | longest leaderless (ms) | recovery p50 / p99 (ms) | "
                 "step-down p50 / p99 / max (ms) |\n";
    std::cout << "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n";
    long violations = 0;
    for (const auto& [b, rep] : phases) {
        for (const auto& [kind, k] : rep.kinds) {
            std::string rec = "-";
            if (!k.recovery_ms.empty())
                rec = fixed0(percentile(k.recovery_ms, 0.5)) + " / " +
                      fixed0(percentile(k.recovery_ms, 0.99));
            std::string down = "-";
            if (!k.stepdown_ms.empty())
                down = fixed0(percentile(k.stepdown_ms, 0.5)) + " / " +
                       fixed0(percentile(k.stepdown_ms, 0.99)) + " / " +
                       fixed0(percentile(k.stepdown_ms, 1.0));
            std::cout << "| " << b.phase << " | " << kind << " | " << k.planned << " | "
                      << k.effective << " | " << k.grants << " | " << k.acked << " | " << k.refused
                      << " | " << total(k.violations) << " | " << fixed0(k.longest_leaderless_ms)
                      << " | " << rec << " | " << down << " |\n";
        }
        violations += total(rep.counts);
    }
    std::cout << "\nnotes (unknown-outcome writes, acknowledged writes lost where allowed, "
                 "callback-interval overlaps, held() overlaps where allowed, "
                 "injection details):\n";
    for (const auto& [b, rep] : phases)
        for (const auto& [kind, k] : rep.kinds) {
            std::cout << "  " << b.phase << "/" << kind << ": unknown " << k.unknown << ", lost "
                      << k.acked_lost << ", callback overlaps " << k.callback_overlaps
                      << ", allowed overlaps " << k.allowed_overlaps;
            for (const auto& [n, c] : k.notes)
                std::cout << ", " << n << " x" << c;
            if (!k.handover_ms.empty())
                std::cout << ", handovers " << k.handover_ms.size() << " (" << k.by_read
                          << " confirmed by a read) p50 / max "
                          << fixed0(percentile(k.handover_ms, 0.5)) << " / "
                          << fixed0(percentile(k.handover_ms, 1.0)) << " ms";
            std::cout << "\n";
        }
    if (violations > 0) {
        std::cout << "\nVIOLATIONS (" << violations << "):\n";
        for (const auto& [b, rep] : phases) {
            for (const auto& [inv, n] : rep.counts)
                std::cout << "  " << b.phase << ": " << inv << " x" << n << "\n";
            for (const auto& v : rep.violations)
                std::cout << v.text << "\n";
        }
        std::cout << "seed " << s.seed << "; rerun with: --profile " << s.profile << " --seed "
                  << s.seed << "\n";
        return 1;
    }
    std::cout << "\nno violations (seed " << s.seed << ")\n";
    return 0;
}

void write_json_report(const settings& s, const std::vector<checked_phase>& phases,
                       const std::string& path) {
    json out{{"profile", s.profile},         {"seed", s.seed},
             {"ttl_ms", s.ttl_ms},           {"retry_ms", s.retry_ms},
             {"takeover_ms", s.takeover_ms}, {"disabled_nemeses", s.disabled}};
    long all = 0;
    json& ps = out["phases"] = json::array();
    for (const auto& [b, rep] : phases) {
        json kinds = json::object();
        for (const auto& [kind, k] : rep.kinds)
            kinds[kind] = {{"planned", k.planned},
                           {"effective", k.effective},
                           {"violations", k.violations},
                           {"grants", k.grants},
                           {"acknowledged_writes", k.acked},
                           {"refusals", k.refused},
                           {"unknown_outcome", k.unknown},
                           {"acknowledged_lost", k.acked_lost},
                           {"longest_leaderless_ms", k.longest_leaderless_ms},
                           {"by_read", k.by_read},
                           {"handover_ms", k.handover_ms}};
        json texts = json::array();
        for (const auto& v : rep.violations)
            texts.push_back({{"invariant", v.invariant}, {"text", v.text}});
        ps.push_back({{"phase", b.phase},
                      {"liveness_bound_ms", liveness_bound_ns(b) / 1000000},
                      {"floors",
                       {{"effective", b.floors.effective},
                        {"grants", b.floors.grants},
                        {"acknowledged_writes", b.floors.acked},
                        {"refusals", b.floors.refused},
                        {"by_read", b.floors.by_read}}},
                      {"violations", rep.counts},
                      {"kinds", kinds},
                      {"violation_texts", texts}});
        all += total(rep.counts);
    }
    out["violations"] = all;
    out["passed"] = all == 0;
    std::ofstream f{path, std::ios::trunc};
    f << out.dump(2) << "\n";
}

} // namespace fault
