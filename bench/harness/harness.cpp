/// @file harness.cpp
/// @brief Phases on client threads, statistics, and the report.
#include "harness.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace bench {

bool settings::wants(const std::string& section) const {
    if (only.empty())
        return true;
    std::stringstream ss{only};
    std::string item;
    while (std::getline(ss, item, ','))
        if (item == section)
            return true;
    return false;
}

phase_result run_phase(std::size_t clients, double seconds,
                       const std::function<std::int64_t(std::size_t)>& op) {
    std::mutex m;
    std::condition_variable cv;
    std::size_t ready = 0;
    bool go = false;
    steady::time_point start;
    steady::time_point deadline;
    std::vector<std::int64_t> counts(clients, 0);
    std::vector<steady::time_point> ends(clients);
    std::vector<std::exception_ptr> errors(clients);
    std::vector<std::thread> threads;
    threads.reserve(clients);
    // Every loop is bounded: by the deadline, and by each worker's own count.
    for (std::size_t i = 0; i < clients; ++i)
        threads.emplace_back([&, i] {
            {
                std::unique_lock<std::mutex> lock{m};
                ++ready;
                cv.notify_all();
                cv.wait(lock, [&] { return go; });
            }
            std::int64_t n = 0;
            try {
                while (steady::now() < deadline) {
                    const std::int64_t done = op(i);
                    if (done <= 0)
                        break;
                    n += done;
                }
            } catch (...) {
                errors[i] = std::current_exception();
            }
            counts[i] = n;
            ends[i] = steady::now();
        });
    {
        std::unique_lock<std::mutex> lock{m};
        cv.wait(lock, [&] { return ready == clients; });
        start = steady::now();
        deadline = start + std::chrono::duration_cast<steady::duration>(
                               std::chrono::duration<double>(seconds));
        go = true;
        cv.notify_all();
    }
    for (auto& t : threads)
        t.join();
    for (auto& e : errors)
        if (e)
            std::rethrow_exception(e);
    phase_result r;
    steady::time_point last = start;
    for (std::size_t i = 0; i < clients; ++i) {
        r.ops += counts[i];
        last = std::max(last, ends[i]);
    }
    r.seconds = std::chrono::duration<double>(last - start).count();
    return r;
}

double median(std::vector<double> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(std::vector<double> v, double p) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    // nearest rank
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    rank = std::clamp<std::size_t>(rank, 1, v.size());
    return v[rank - 1];
}

double row::ratio() const {
    if (paired && !samples.empty() && samples.size() == baseline_samples.size()) {
        std::vector<double> ratios;
        for (std::size_t i = 0; i < samples.size(); ++i)
            if (baseline_samples[i] > 0)
                ratios.push_back(samples[i] / baseline_samples[i]);
        if (ratios.size() == samples.size())
            return median(ratios);
    }
    return baseline > 0 ? value / baseline : 0;
}

void report::add(row r) {
    m_rows.push_back(std::move(r));
}

void report::add_text(std::string text) {
    m_texts.push_back(std::move(text));
}

const row* report::find(const std::string& figure, int clients) const {
    for (const auto& r : m_rows)
        if (r.figure == figure && r.clients == clients)
            return &r;
    return nullptr;
}

bool report::all_positive() const {
    for (const auto& r : m_rows)
        if (!(r.value > 0) || (!r.baseline_name.empty() && !(r.baseline > 0)))
            return false;
    return true;
}

namespace {

std::string fmt(double v, int prec = 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    return buf;
}

std::string ratio_text(const row& r) {
    if (r.baseline_name.empty() || r.baseline <= 0 || r.unit == "ms")
        return "";
    return fmt(r.ratio(), 2) + "x";
}

std::string goal_text(const row& r) {
    if (r.goal <= 0)
        return "";
    if (r.goal_max)
        return (r.value <= r.goal ? "met (<= " : "MISSED (<= ") + fmt(r.goal) + " " + r.unit + ")";
    const double ratio = r.ratio();
    return (ratio >= r.goal ? "met (>= " : "MISSED (>= ") + fmt(r.goal, 2) + "x)";
}

} // namespace

void report::print() const {
    // ratio: median over rounds of (figure / baseline measured next to it)
    const char* header = "| figure | clients | pg_lease | baseline | ratio | goal | note |\n"
                         "|---|---:|---:|---|---:|---|---|\n";
    std::cout << "\n" << header;
    for (const auto& r : m_rows) {
        const int prec = r.unit == "ms" ? 1 : 0;
        std::cout << "| " << r.figure << " | " << (r.clients > 0 ? std::to_string(r.clients) : "")
                  << " | " << fmt(r.value, prec) << " " << r.unit << " | "
                  << (r.baseline_name.empty()
                          ? ""
                          : r.baseline_name + ": " + fmt(r.baseline, prec) + " " + r.unit)
                  << " | " << ratio_text(r) << " | " << goal_text(r) << " | " << r.note << " |\n";
    }
    for (const auto& t : m_texts)
        std::cout << "\n" << t;
    std::cout.flush();
}

void report::write_json(const std::string& path, const settings& s) const {
    nlohmann::json j;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const std::time_t now = std::time(nullptr);
    char when[64];
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    j["date"] = when;
    j["host"] = host;
    j["cores"] = std::thread::hardware_concurrency();
    j["rounds"] = s.rounds;
    j["seconds_per_phase"] = s.seconds;
    j["smoke"] = s.smoke;
    j["rows"] = nlohmann::json::array();
    for (const auto& r : m_rows) {
        nlohmann::json o{{"section", r.section}, {"figure", r.figure}, {"clients", r.clients},
                         {"value", r.value},     {"unit", r.unit},     {"samples", r.samples}};
        if (!r.baseline_name.empty()) {
            o["baseline_name"] = r.baseline_name;
            o["baseline"] = r.baseline;
            o["baseline_samples"] = r.baseline_samples;
            if (r.baseline > 0)
                o["ratio"] = r.ratio();
        }
        if (r.goal > 0) {
            o["goal"] = r.goal;
            o["goal_kind"] = r.goal_max ? "max" : "min_ratio";
            o["goal_met"] =
                r.goal_max ? r.value <= r.goal : (r.baseline > 0 && r.ratio() >= r.goal);
        }
        if (!r.note.empty())
            o["note"] = r.note;
        for (const auto& [key, v] : r.extra)
            o[key] = v;
        j["rows"].push_back(std::move(o));
    }
    std::ofstream out{path};
    if (!out)
        throw std::runtime_error("cannot write " + path);
    out << j.dump(2) << "\n";
}

void log(const std::string& line) {
    static std::mutex m;
    std::lock_guard<std::mutex> lock{m};
    std::cerr << "[bench] " << line << std::endl;
}

} // namespace bench
