/// @file bundle.cpp
/// @brief JSON (de)serialisation of a phase's recorded format.
#include "bundle.hpp"

#include <fstream>
#include <stdexcept>

namespace fault {

using nlohmann::json;

namespace {

json fault_json(const fault_record& f) {
    return {{"kind", f.kind},
            {"lease", f.lease},
            {"t", f.t},
            {"end", f.end},
            {"detail", f.detail},
            {"target", f.target},
            {"blocks_service", f.blocks_service},
            {"allow_ms", f.allow_ms},
            {"epoch", f.epoch}};
}

fault_record fault_from(const json& j) {
    fault_record f;
    f.kind = j.at("kind").get<std::string>();
    f.lease = j.value("lease", "");
    f.t = j.at("t").get<std::int64_t>();
    f.end = j.value("end", f.t);
    f.detail = j.value("detail", "");
    f.target = j.value("target", "");
    f.blocks_service = j.value("blocks_service", false);
    f.allow_ms = j.value("allow_ms", std::int64_t{0});
    f.epoch = j.value("epoch", std::int64_t{0});
    return f;
}

} // namespace

json to_json(const phase_bundle& b) {
    json j{{"format", bundle_format},
           {"phase", b.phase},
           {"seed", b.seed},
           {"ttl_ms", b.ttl_ms},
           {"retry_ms", b.retry_ms},
           {"takeover_ms", b.takeover_ms},
           {"end", b.end},
           {"expect",
            {{"lost_acks_allowed", b.expect.lost_acks_allowed},
             {"overlaps_allowed", b.expect.overlaps_allowed},
             {"server_clock_stepped", b.expect.server_clock_stepped}}},
           {"floors",
            {{"effective", b.floors.effective},
             {"grants", b.floors.grants},
             {"acked", b.floors.acked},
             {"refused", b.floors.refused},
             {"by_read", b.floors.by_read}}},
           {"planned", b.planned}};
    json& faults = j["faults"] = json::array();
    for (const auto& f : b.faults)
        faults.push_back(fault_json(f));
    json& events = j["events"] = json::array();
    for (const auto& e : b.events)
        events.push_back({{"id", e.id},
                          {"event", e.event},
                          {"lease", e.lease},
                          {"holder", e.holder},
                          {"epoch", e.epoch},
                          {"ord", e.ord}});
    json& writes = j["writes"] = json::array();
    for (const auto& w : b.writes)
        writes.push_back({{"lease", w.lease},
                          {"worker", w.worker},
                          {"seq", w.seq},
                          {"epoch", w.epoch},
                          {"ord", w.ord},
                          {"ops", w.ops}});
    json& scratch = j["scratch"] = json::array();
    for (const auto& s : b.scratch)
        scratch.push_back({{"lease", s.lease},
                           {"worker", s.worker},
                           {"seq", s.seq},
                           {"rolled_back", s.rolled_back}});
    json& counters = j["counters"] = json::array();
    for (const auto& c : b.counters)
        counters.push_back({{"lease", c.lease}, {"worker", c.worker}, {"n", c.n}});
    json& downstream = j["downstream_writes"] = json::array();
    for (const auto& w : b.downstream_writes)
        downstream.push_back({{"lease", w.lease},
                              {"worker", w.worker},
                              {"seq", w.seq},
                              {"epoch", w.epoch},
                              {"ord", w.ord}});
    json& raises = j["raises"] = json::array();
    for (const auto& r : b.raises)
        raises.push_back({{"lease", r.lease}, {"epoch", r.epoch}, {"ord", r.ord}});
    j["history"] = b.history;
    return j;
}

phase_bundle bundle_from_json(const json& j) {
    if (j.value("format", "") != bundle_format)
        throw std::runtime_error("not a " + std::string{bundle_format} + " file");
    phase_bundle b;
    b.phase = j.at("phase").get<std::string>();
    b.seed = j.value("seed", 0U);
    b.ttl_ms = j.at("ttl_ms").get<int>();
    b.retry_ms = j.at("retry_ms").get<int>();
    b.takeover_ms = j.value("takeover_ms", 1000);
    b.end = j.at("end").get<std::int64_t>();
    const json& ex = j.at("expect");
    b.expect.lost_acks_allowed = ex.value("lost_acks_allowed", false);
    b.expect.server_clock_stepped = ex.value("server_clock_stepped", false);
    b.expect.overlaps_allowed = ex.value("overlaps_allowed", b.expect.server_clock_stepped);
    if (j.contains("floors")) {
        const json& fl = j["floors"];
        b.floors.effective = fl.value("effective", std::map<std::string, int>{});
        b.floors.grants = fl.value("grants", 0L);
        b.floors.acked = fl.value("acked", 0L);
        b.floors.refused = fl.value("refused", 0L);
        b.floors.by_read = fl.value("by_read", 0L);
    }
    b.planned = j.value("planned", std::map<std::string, int>{});
    for (const auto& f : j.at("faults"))
        b.faults.push_back(fault_from(f));
    for (const auto& e : j.at("events"))
        b.events.push_back({e.at("id").get<std::int64_t>(), e.at("epoch").get<std::int64_t>(),
                            e.value("ord", std::int64_t{-1}), e.at("event").get<std::string>(),
                            e.at("lease").get<std::string>(), e.value("holder", "")});
    for (const auto& w : j.at("writes"))
        b.writes.push_back({w.at("lease").get<std::string>(), w.at("worker").get<std::string>(),
                            w.value("ops", ""), w.at("seq").get<std::int64_t>(),
                            w.at("epoch").get<std::int64_t>(), w.value("ord", std::int64_t{-1})});
    for (const auto& s : j.value("scratch", json::array()))
        b.scratch.push_back({s.at("lease").get<std::string>(), s.at("worker").get<std::string>(),
                             s.at("seq").get<std::int64_t>(), s.value("rolled_back", false)});
    for (const auto& c : j.value("counters", json::array()))
        b.counters.push_back({c.at("lease").get<std::string>(), c.at("worker").get<std::string>(),
                              c.at("n").get<std::int64_t>()});
    for (const auto& w : j.value("downstream_writes", json::array()))
        b.downstream_writes.push_back(
            {w.at("lease").get<std::string>(), w.at("worker").get<std::string>(), "",
             w.at("seq").get<std::int64_t>(), w.at("epoch").get<std::int64_t>(),
             w.value("ord", std::int64_t{-1})});
    for (const auto& r : j.value("raises", json::array()))
        b.raises.push_back({r.at("lease").get<std::string>(), r.at("epoch").get<std::int64_t>(),
                            r.value("ord", std::int64_t{-1})});
    for (const auto& r : j.at("history"))
        b.history.push_back(r);
    return b;
}

void save_bundle(const phase_bundle& b, const std::string& path) {
    std::ofstream out{path, std::ios::trunc};
    out << to_json(b).dump() << "\n";
    if (!out)
        throw std::runtime_error("cannot write " + path);
}

phase_bundle load_bundle(const std::string& path) {
    std::ifstream in{path};
    if (!in)
        throw std::runtime_error("cannot read " + path);
    return bundle_from_json(json::parse(in));
}

} // namespace fault
