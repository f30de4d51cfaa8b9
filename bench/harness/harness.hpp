/// @file harness.hpp
/// @brief N client threads, each with its own connection, time- and
/// count-bounded phases, medians over rounds, and the report (table + JSON).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace bench {

using steady = std::chrono::steady_clock;

/// Settings of one run, from the command line.
struct settings {
    std::string pg_conninfo;        ///< empty: PG* environment
    std::string etcd_url;           ///< e.g. http://127.0.0.1:2379; empty: skip etcd
    std::string redis_host;         ///< empty: skip Redis
    int redis_port = 6379;
    std::vector<int> clients{1, 4, 16};
    int rounds = 5;
    double seconds = 1.0;           ///< length of one timed phase
    int failover_runs = 30;
    int handover_runs = 40;
    std::vector<int> scale_leases{10, 1000, 100000};
    int scale_sessions = 100;
    /// growth: sizes of leases and lease_events (rows), fenced tables
    std::vector<int> growth_leases{1, 1000, 100000, 1000000};
    std::vector<int> growth_events{0, 1000000, 10000000};
    std::vector<int> growth_fenced{1, 10, 100};
    int many_leases = 100000;       ///< section "many": leases held by lease_set processes
    int many_procs = 100;           ///< ... by this many processes (and as many etcd clients)
    int many_cycles = 3;            ///< renewal cycles (keepalive rounds) measured
    int many_ttl_ms = 30000;
    std::string only;               ///< comma-separated sections; empty: all
    std::string json_path;
    std::string tag;                ///< makes names unique in a shared server
    bool smoke = false;

    [[nodiscard]] bool wants(const std::string& section) const;
};

struct phase_result {
    std::int64_t ops = 0;
    double seconds = 0;
    [[nodiscard]] double rate() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0; }
};

/// Runs op(i) on one thread per client i, all started together, each until
/// the deadline or until op returns 0 (no more work); op returns how many
/// operations it did.  ops = their sum; seconds = start to last finish.
phase_result run_phase(std::size_t clients, double seconds,
                       const std::function<std::int64_t(std::size_t)>& op);

/// Opens `clients` workers in parallel (connection set-up is not timed).
template <class W>
std::vector<std::unique_ptr<W>> open_workers(std::size_t clients,
                                             const std::function<std::unique_ptr<W>(std::size_t)>& make);

double median(std::vector<double> v);
double percentile(std::vector<double> v, double p);

/// The report: rows of the table, each also a JSON object.
struct row {
    std::string section;
    std::string figure;
    int clients = 0;
    double value = 0;          ///< ops/s, or ms or us for latencies
    double baseline = 0;       ///< 0: none
    std::string baseline_name;
    std::string unit = "ops/s";
    double goal = 0;           ///< minimum ratio (or maximum ms when goal_max); 0: none
    bool goal_max = false;
    std::string note;
    std::vector<double> samples;           ///< value per round
    std::vector<double> baseline_samples;  ///< baseline per round
    bool paired = true;        ///< samples[i] and baseline_samples[i] ran side by side
    std::map<std::string, double> extra;   ///< more figures of the row, for the JSON only

    /// Median of the per-round ratios when paired, else ratio of medians.
    [[nodiscard]] double ratio() const;
};

class report {
public:
    void add(row r);
    /// Text printed after the table (e.g. a section's own summary).
    void add_text(std::string text);
    void print() const;
    void write_json(const std::string& path, const settings& s) const;
    [[nodiscard]] const std::vector<row>& rows() const noexcept { return m_rows; }
    [[nodiscard]] bool all_positive() const;
    [[nodiscard]] const row* find(const std::string& figure, int clients) const;

private:
    std::vector<row> m_rows;
    std::vector<std::string> m_texts;
};

void log(const std::string& line);

} // namespace bench

#include "harness_impl.hpp"
