/// @file checker.cpp
/// @brief The checker's entry point and the context its checks share.
#include "check_context.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace fault {

using nlohmann::json;

std::int64_t time_of(const json& r) {
    if (r.contains("t0"))
        return r["t0"].get<std::int64_t>();
    return r.value("t", std::int64_t{0});
}

std::string op_of(const json& r) {
    return r.value("op", std::string{});
}

std::string res_of(const json& r) {
    return r.value("r", std::string{});
}

std::int64_t liveness_bound_ns(const phase_bundle& b) {
    const std::int64_t ttl = std::int64_t{b.ttl_ms} * 1000000;
    const std::int64_t margin = std::max<std::int64_t>(500000000, ttl / 2);
    return ttl + std::int64_t{b.retry_ms} * 1200000 + std::int64_t{b.takeover_ms} * 1000000 +
           margin;
}

check_context::check_context(const phase_bundle& bundle)
    : b{bundle}
    , ttl{std::int64_t{bundle.ttl_ms} * 1000000}
    , margin{std::min<std::int64_t>(ttl / 10, 1000000000)}
    , retry{std::int64_t{bundle.retry_ms} * 1000000}
    , takeover{std::int64_t{bundle.takeover_ms} * 1000000}
    , bound{liveness_bound_ns(bundle)}
    , faults{bundle.faults} {
    std::sort(faults.begin(), faults.end(),
              [](const fault_record& x, const fault_record& y) { return x.t < y.t; });
    t0 = b.history.empty() ? 0 : time_of(b.history.front());
    for (const auto& r : b.history)
        t0 = std::min(t0, time_of(r));
    for (const auto& [kind, n] : b.planned)
        report.kinds[kind].planned = n;
    for (const auto& f : faults) {
        auto& k = report.kinds[f.kind];
        ++k.effective;
        if (!f.detail.empty())
            ++k.notes[f.detail];
    }
}

kind_stats& check_context::at(const std::string& lease, std::int64_t t) {
    const fault_record* last = nullptr;
    for (const auto& f : faults) {
        if (f.t > t)
            break;
        if (f.lease.empty() || f.lease == lease)
            last = &f;
    }
    return report.kinds[last ? last->kind : "baseline"];
}

std::string check_context::ms(std::int64_t t) const {
    std::ostringstream o;
    o << std::fixed << std::setprecision(1) << static_cast<double>(t - t0) / 1e6;
    return o.str();
}

std::string check_context::around(const std::string& lease, std::int64_t from, std::int64_t to,
                                  const std::set<std::string>& who) const {
    std::vector<const json*> sel;
    for (const auto& r : b.history) {
        const auto t = time_of(r);
        if (r.value("L", std::string{}) != lease || t < from || t > to)
            continue;
        const std::string w = r.value("w", std::string{});
        const bool is_grant = op_of(r) == "acq" && res_of(r) == "ok";
        if (op_of(r) == "held" && !who.count(w))
            continue;
        if (who.empty() || is_grant || who.count(w) || who.count(w.substr(0, w.find('.'))))
            sel.push_back(&r);
    }
    std::stable_sort(sel.begin(), sel.end(),
                     [](const json* x, const json* y) { return time_of(*x) < time_of(*y); });
    std::ostringstream o;
    o << "    history of lease " << lease << " (ms since phase start; t0 = sent, t = reply):\n";
    for (const auto& f : faults)
        if (f.t >= from && f.t <= to && (f.lease.empty() || f.lease == lease))
            o << "      t=" << ms(f.t) << " NEMESIS " << f.kind << " " << f.detail
              << (f.target.empty() ? "" : " on " + f.target) << " until " << ms(f.end) << "\n";
    const std::size_t limit = 60;
    const std::size_t skip = sel.size() > limit ? sel.size() - limit : 0;
    if (skip)
        o << "      ... " << skip << " earlier records\n";
    for (std::size_t i = skip; i < sel.size(); ++i) {
        const json& r = *sel[i];
        o << "      ";
        if (r.contains("t0"))
            o << "t0=" << ms(r["t0"].get<std::int64_t>()) << " ";
        if (r.contains("t"))
            o << "t=" << ms(r["t"].get<std::int64_t>()) << " ";
        o << r.value("w", std::string{}) << " " << op_of(r) << " "
          << r.value("ph", r.value("r", std::string{}));
        if (r.contains("v"))
            o << (r["v"].get<bool>() ? "true" : "false");
        o << " e=" << r.value("e", std::int64_t{0});
        if (r.contains("s"))
            o << " s=" << r["s"].get<std::int64_t>();
        if (r.contains("x")) {
            std::string x = r["x"].get<std::string>().substr(0, 80);
            std::replace(x.begin(), x.end(), '\n', ' ');
            o << " (" << x << ")";
        }
        o << "\n";
    }
    return o.str();
}

void check_context::violation(const std::string& invariant, const std::string& what,
                              const std::string& lease, std::int64_t t,
                              const std::set<std::string>& who, const std::string& kind) {
    ++report.counts[invariant];
    ++(kind.empty() ? at(lease, t) : report.kinds[kind]).violations[invariant];
    if (report.violations.size() >= 12)
        return; // the first ones carry the story
    std::string text = "[" + b.phase + "] " + invariant + ": " + what + "\n";
    if (t > 0 && !lease.empty())
        text += around(lease, t - 2 * ttl, t + ttl, who);
    report.violations.push_back({invariant, text});
}

phase_report check_bundle(const phase_bundle& b) {
    check_context c{b};
    check_grants(c);
    check_writes(c);
    check_downstream(c);
    check_beliefs(c);
    check_long_txns(c);
    check_liveness(c);
    check_floors(c);
    return std::move(c.report);
}

} // namespace fault
