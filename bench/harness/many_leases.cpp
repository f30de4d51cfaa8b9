/// @file many_leases.cpp
/// @brief Section "many": 100,000 leases at ttl 30 s held by 100 processes
/// (fork + exec of this binary, --lease-set-child), each with one
/// pglease::lease_set renewing its 1,000 leases in one lease_renew_many per
/// cycle; the cycle time per process (p50, p99), the headroom (ttl/3) / p99,
/// the server's CPU per cycle; then etcd holding as many leases with
/// keepalives (etcd_many.cpp), and the two headrooms side by side.
#include "child_procs.hpp"
#include "figures.hpp"
#include "pg.hpp"
#include "pg_names.hpp"
#include "proc_stat.hpp"

#include <algorithm>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace bench {

namespace {

using ms = std::chrono::milliseconds;

/// What one child reported.
struct child_report {
    double held_ms = 0;
    std::vector<double> cycle_ms;
    long renew_rounds = 0;
    long acquire_rounds = 0;
    double stop_ms = 0;
    long release_rounds = 0;
};

/// The server must accept `procs` more sessions (plus this one's admin).
void check_capacity(pg_session& admin, int procs) {
    pg_result r = admin.query(
        "SELECT current_setting('max_connections')::int"
        " - current_setting('superuser_reserved_connections')::int"
        " - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int");
    const int room = std::stoi(r.text(0, 0));
    if (room < procs + 1)
        throw std::runtime_error("many: the server has room for " + std::to_string(room) +
                                 " more sessions, " + std::to_string(procs + 1) +
                                 " needed (raise max_connections)");
}

/// The words of @p line after its first, which must be @p tag.
std::vector<std::string> words_after(const std::string& line, const std::string& tag) {
    std::istringstream in{line};
    std::string first;
    in >> first;
    if (first != tag)
        throw std::runtime_error("many: child said \"" + line + "\", expected " + tag);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

std::string expect_line(child_proc& c, const std::string& tag, steady::time_point until) {
    const auto line = c.read_line(until);
    if (!line)
        throw std::runtime_error("many: child " + std::to_string(c.pid()) + " said nothing (" +
                                 tag + ") in time");
    (void)words_after(*line, tag);
    return *line;
}

row make_row(const std::string& section, const std::string& figure, int clients, double value,
             const std::string& unit, const std::string& note) {
    row r;
    r.section = section;
    r.figure = figure;
    r.clients = clients;
    r.value = value;
    r.unit = unit;
    r.note = note;
    r.samples = {value};
    return r;
}

std::string fixed(double v, int prec = 1) {
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(prec);
    o << v;
    return o.str();
}

} // namespace

void run_many_leases(const settings& s, report& out) {
    const int procs = s.many_procs;
    const int leases = s.many_leases;
    const ms ttl{s.many_ttl_ms};
    const double third_ms = static_cast<double>(ttl.count()) / 3;
    const auto deadline = steady::now() + ms{150000}; // the PostgreSQL side's bound
    pg_session admin{s.pg_conninfo};
    check_capacity(admin, procs);
    require_open_files(2L * procs + 64);
    const std::string ext = extension_prefix(admin);
    const std::string prefix = "m" + s.tag + "-";

    // The server's processes, when the server runs on this machine.
    std::optional<pid_t> postmaster;
    if (const auto p = parent_of(admin.backend_pid()); p && process_cpu(*p))
        postmaster = p;

    log("many: " + std::to_string(leases) + " leases at ttl " + std::to_string(ttl.count()) +
        " ms, " + std::to_string(procs) + " processes");
    std::vector<std::unique_ptr<child_proc>> children;
    for (int i = 0; i < procs; ++i) {
        const long first = static_cast<long>(leases) * i / procs;
        const long next = static_cast<long>(leases) * (i + 1) / procs;
        children.push_back(std::make_unique<child_proc>(std::vector<std::string>{
            "--lease-set-child", s.pg_conninfo, "many-" + std::to_string(i), prefix,
            std::to_string(first), std::to_string(next - first), std::to_string(ttl.count()),
            std::to_string(s.many_cycles)}));
    }
    std::vector<child_report> rep(children.size());
    for (std::size_t i = 0; i < children.size(); ++i)
        rep[i].held_ms =
            std::stod(words_after(expect_line(*children[i], "held", deadline), "held")[0]);
    const double acquire_ms =
        std::max_element(rep.begin(), rep.end(), [](const auto& a, const auto& b) {
            return a.held_ms < b.held_ms;
        })->held_ms;
    log("many: all held after " + fixed(acquire_ms, 0) + " ms; counting " +
        std::to_string(s.many_cycles) + " renewal cycles");

    std::vector<pid_t> child_pids;
    child_pids.reserve(children.size());
    for (const auto& c : children)
        child_pids.push_back(c->pid());
    const auto server0 = postmaster ? tree_cpu(*postmaster) : std::chrono::microseconds{0};
    const auto client0 = total_cpu(child_pids);
    for (auto& c : children)
        c->write_line("go");
    std::vector<double> all_cycles;
    for (std::size_t i = 0; i < children.size(); ++i) {
        for (const auto& w : words_after(expect_line(*children[i], "cycles", deadline), "cycles"))
            rep[i].cycle_ms.push_back(std::stod(w) / 1000.0);
        const auto rounds = words_after(expect_line(*children[i], "rounds", deadline), "rounds");
        rep[i].renew_rounds = std::stol(rounds.at(0));
        rep[i].acquire_rounds = std::stol(rounds.at(1));
        all_cycles.insert(all_cycles.end(), rep[i].cycle_ms.begin(), rep[i].cycle_ms.end());
    }
    const auto server1 = postmaster ? tree_cpu(*postmaster) : std::chrono::microseconds{0};
    const auto client1 = total_cpu(child_pids);

    // One transaction per process renewed all its rows: as many distinct
    // xmin as processes (the leases of one process share theirs).
    pg_result check = admin.query(
        "SELECT count(DISTINCT l.xmin::text), count(*) FILTER (WHERE s.valid) FROM " + ext +
            "leases l JOIN " + ext + "lease_status s USING (name) WHERE starts_with(name, $1)",
        {prefix});
    const long writers = std::stol(check.text(0, 0));
    const long valid = std::stol(check.text(0, 1));
    if (valid != leases)
        throw std::runtime_error("many: " + std::to_string(valid) + " of " +
                                 std::to_string(leases) + " leases valid on the server");

    for (auto& c : children)
        c->write_line("stop");
    for (std::size_t i = 0; i < children.size(); ++i) {
        const auto w = words_after(expect_line(*children[i], "stopped", deadline), "stopped");
        rep[i].stop_ms = std::stod(w.at(0));
        rep[i].release_rounds = std::stol(w.at(1));
        if (children[i]->wait(deadline) != 0)
            throw std::runtime_error("many: a child failed");
    }
    children.clear();
    pg_result left = admin.query("SELECT count(*) FROM " + ext +
                                     "lease_status WHERE valid AND starts_with(name, $1)",
                                 {prefix});
    const long still_valid = std::stol(left.text(0, 0));

    // Each process: one acquire round trip, one renew per cycle, one release.
    long most_acquires = 0, most_releases = 0;
    double stop_ms = 0;
    for (const auto& r : rep) {
        most_acquires = std::max(most_acquires, r.acquire_rounds);
        most_releases = std::max(most_releases, r.release_rounds);
        stop_ms = std::max(stop_ms, r.stop_ms);
    }
    const double p50 = percentile(all_cycles, 50);
    const double p99 = percentile(all_cycles, 99);
    const double headroom = third_ms / p99;
    const std::string shape = std::to_string(leases) + " leases, " + std::to_string(procs) +
                              " processes, ttl " +
                              fixed(static_cast<double>(ttl.count()) / 1000, 0) + " s";
    log("many: cycle p50 " + fixed(p50) + " ms, p99 " + fixed(p99) + " ms, headroom " +
        fixed(headroom) + "x; " + std::to_string(writers) + " writing transactions");

    out.add(make_row("many", "lease_set renew cycle p50 per process (" + shape + ")", procs, p50,
                     "ms", "one lease_renew_many = one durable commit per process per cycle"));
    row r99 = make_row("many", "lease_set renew cycle p99 per process (" + shape + ")", procs, p99,
                       "ms", "headroom (ttl/3)/p99 = " + fixed(headroom) + "x");
    r99.samples = all_cycles;
    r99.goal = third_ms / 3; // headroom >= 3x
    r99.goal_max = true;
    out.add(r99);
    row h = make_row("many", "lease_set headroom (ttl/3) / p99 cycle", procs, headroom, "x",
                     std::to_string(s.many_cycles) + " cycles x " + std::to_string(procs) +
                         " processes");
    h.baseline = 1.0;
    h.baseline_name = "p99 = ttl/3";
    h.paired = false;
    h.goal = 3.0;
    out.add(h);
    out.add(make_row("many",
                     "transactions that wrote the last renewal of all " + std::to_string(leases) +
                         " rows",
                     procs, static_cast<double>(writers), "txns",
                     "distinct xmin; one per process = one lease_renew_many each (per process: " +
                         std::to_string(most_acquires) + " acquire, " +
                         std::to_string(most_releases) + " release round trip(s) at most)"));
    // /proc counts CPU in clock ticks (10 ms): a small run can read 0, which
    // says "below resolution", not "free", so such a row is left out.
    if (postmaster && server1 > server0) {
        const double per_cycle =
            static_cast<double>((server1 - server0).count()) / 1000.0 / s.many_cycles;
        out.add(make_row("many", "server CPU per cycle (" + std::to_string(leases) + " renewals)",
                         procs, per_cycle, "ms",
                         "all postmaster children; " + fixed(per_cycle / third_ms * 100) +
                             "% of one core at one cycle per ttl/3"));
    }
    if (client1 > client0)
        out.add(make_row("many", "client CPU per cycle (" + std::to_string(procs) + " processes)",
                         procs,
                         static_cast<double>((client1 - client0).count()) / 1000.0 / s.many_cycles,
                         "ms", "the lease_set processes, all threads"));
    else
        log("many: client CPU below /proc's resolution (10 ms); row left out");
    out.add(make_row("many", "acquire all " + std::to_string(leases) + " (processes at once)",
                     procs, acquire_ms, "ms", "one acquire_many round trip per process"));
    out.add(make_row("many", "stop: release all (slowest process)", procs, stop_ms, "ms",
                     std::to_string(still_valid) + " left valid after stop"));

    if (!s.etcd_url.empty()) {
        const double etcd_headroom = run_etcd_many(s, out);
        row c =
            make_row("vs_etcd", "headroom at ttl/3: pg_lease lease_set vs etcd keepalives", procs,
                     headroom, "x", "ours: durable commits; etcd: keepalives not persisted");
        c.baseline = etcd_headroom;
        c.baseline_name = "etcd keepalive headroom";
        c.paired = false;
        out.add(c);
    }
}

} // namespace bench
