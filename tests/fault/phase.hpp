/// @file phase.hpp
/// @brief One phase of the suite: its clusters, its worker processes, the
/// faults the nemesis recorded, and at the end its recorded history
/// (bundle.hpp), read from the database and the workers' files.
#pragma once

#include "bundle.hpp"
#include "cluster.hpp"
#include "netns.hpp"
#include "options.hpp"
#include "tcp_relay.hpp"

#include <pqxx/connection>
#include <pqxx/nontransaction>

#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace fault {

/// The process leading a lease, as the database says now.
struct leader_info {
    std::string label;    ///< worker label, e.g. "p3"
    std::string identity; ///< its elector identity, e.g. "p3.0"
    int pid = 0;
    std::int64_t epoch = 0;
};

/// A live worker process (spawn_worker).
struct worker_ref {
    std::string label;   ///< e.g. "p3"
    std::string history; ///< its history file; worker.hpp's side files beside it
    int pid = 0;
};

class phase {
public:
    phase(const settings& s, std::string name, std::mt19937& rng);
    ~phase();
    phase(const phase&) = delete;
    phase& operator=(const phase&) = delete;
    phase(phase&&) = delete;
    phase& operator=(phase&&) = delete;

    /// initdb + start the primary, create the extension and the schema.
    void start_primary(const std::vector<std::string>& leases, bool faketime,
                       const std::vector<std::string>& extra = {});
    /// A streaming standby of the primary.
    cluster& add_standby(const std::vector<std::string>& extra);
    void set_worker_conninfo(std::string c) { m_conninfo = std::move(c); }
    void set_worker_env(std::vector<std::string> env) { m_env = std::move(env); }
    /// Workers connect through pgbouncer (transaction pooling, no LISTEN).
    void use_pool();
    /// Dozens of workers on 2 cores: held() sampled every 10 ms, a write
    /// every 50 ms; with @p listen false (hundreds), no LISTEN either
    /// (candidates poll at the retry period).
    void use_fleet_load(bool listen);
    /// Each worker on a host of its own (netns.hpp): @p n hosts, taken in
    /// turn by the workers spawned (a replacement takes its predecessor's).
    /// Before start_primary, which then listens on their links.
    void use_hosts(int n);
    /// The hosts, or nullptr; the host of worker @p label (-1 if none).
    [[nodiscard]] const net_hosts* hosts() const noexcept { return m_hosts.get(); }
    [[nodiscard]] int host_of(const std::string& label) const;
    /// Each worker through slow links of its own (tcp_relay.hpp) to the
    /// primary: @p n of them, taken in turn as hosts are; with a downstream
    /// database, a second link per worker for it. Before the workers.
    void use_relays(int n) { m_relay_count = n; }
    /// The link worker @p label reaches the store through, or nullptr.
    [[nodiscard]] pglease_test::tcp_relay* relay_of(const std::string& label);
    /// The link worker @p label reaches the downstream database through
    /// (use_relays with add_downstream), or nullptr.
    [[nodiscard]] pglease_test::tcp_relay* down_relay_of(const std::string& label);
    /// Every fenced transaction of the workers spawned from now on is
    /// bounded by @p ms (run_fenced's timeout; checked as B1).
    void bound_writes(int ms) { m_write_timeout_ms = ms; }
    /// A downstream database on the primary's cluster (downstream.hpp):
    /// workers also write there, and raise its floors at each term.
    void add_downstream();

    /// A worker process on @p lease (on host @p host, or the next in turn).
    int spawn_worker(const std::string& lease, bool storm, int host = -1);
    /// Replaces the (killed) process @p pid by a fresh worker on its lease.
    void replace(int pid, bool storm);

    /// Runs @p query on the controller's own session to the primary, kept
    /// open between calls (a storm's server starts sessions slowly, and a
    /// leader looked up on a new session may have lost its grant by the
    /// answer); a broken session is dropped and the next call opens one.
    pqxx::result ask(const std::function<pqxx::result(pqxx::nontransaction&)>& query);
    /// The live process whose identity holds a valid grant of @p lease.
    std::optional<leader_info> leader(const std::string& lease);
    /// Waits up to @p timeout_ms for one.
    std::optional<leader_info> wait_leader(const std::string& lease, int timeout_ms);
    /// The live worker processes on @p lease.
    std::vector<worker_ref> workers(const std::string& lease);

    /// Records an effective injection.
    void record(fault_record f) { m_faults.push_back(std::move(f)); }
    /// Whether the nemesis of @p kind was switched off (--disable-nemesis).
    [[nodiscard]] bool disabled(const std::string& kind) const {
        return m_s.disabled.count(kind) != 0;
    }

    template <typename T>
    const T& pick(const std::vector<T>& v) {
        std::uniform_int_distribution<std::size_t> d{0, v.size() - 1};
        return v[d(m_rng)];
    }
    int uniform(int lo, int hi) { return std::uniform_int_distribution<int>{lo, hi}(m_rng); }

    /// Stops the workers, reads the database and the histories, saves the
    /// bundle as <root>/<phase>.history.json and returns it.
    phase_bundle finish(const phase_expectations& expect, const phase_floors& floors,
                        const std::map<std::string, int>& planned);

    std::vector<std::unique_ptr<cluster>>& nodes() { return m_nodes; }
    cluster& primary() { return *m_nodes[static_cast<std::size_t>(m_primary)]; }
    void set_primary(int i) { m_primary = i; }
    [[nodiscard]] int primary_index() const { return m_primary; }
    [[nodiscard]] const std::string& dir() const { return m_dir; }
    [[nodiscard]] const std::string& name() const { return m_name; }
    [[nodiscard]] const std::vector<std::string>& leases() const { return m_leases; }

    const settings& m_s;

private:
    void setup_schema();
    /// The store's and the downstream's connection strings of a worker on
    /// @p host (-1: the next in turn, set here) (phase_links.cpp).
    std::pair<std::string, std::string> links_for(int& host);
    struct proc {
        std::string label, lease, history;
        int pid;
        int host = -1; ///< index in m_hosts (or m_relays), or -1
    };
    std::string m_name;
    std::mt19937& m_rng;
    std::string m_dir;
    std::vector<std::unique_ptr<cluster>> m_nodes;
    int m_primary = 0;
    std::unique_ptr<bouncer> m_pool;
    std::vector<std::string> m_leases;
    std::vector<proc> m_procs;
    int m_next_label = 0;
    std::vector<fault_record> m_faults;
    std::string m_conninfo;
    std::string m_downstream; ///< the downstream database's conninfo, or empty
    std::vector<std::string> m_env;
    std::unique_ptr<pqxx::connection> m_control; ///< ask()'s session
    std::string m_control_to;                    ///< ... and its conninfo
    bool m_listen = true;
    int m_sample_ms = 2, m_write_interval_ms = 20;
    int m_write_timeout_ms = 0;
    int m_relay_count = 0;
    std::vector<std::unique_ptr<pglease_test::tcp_relay>> m_relays, m_down_relays;
    std::unique_ptr<net_hosts> m_hosts; ///< last: removed after the workers ended
    int m_next_host = 0;
};

/// Sleeps @p ms, ending early when interrupted.
void settle(int ms);

/// A connection for the suite's own bookkeeping (schema, reading the
/// history): bounded retries, so a server busy with the phase's workers
/// is waited for (6 attempts of connect_timeout, 1 s apart), never given
/// up on after one connect_timeout.
std::unique_ptr<pqxx::connection> patient_connection(const std::string& conninfo);

/// The commit order of fenced rows: sequence fault_order, table
/// commit_order and the trigger function fault_commit_order(), which a
/// deferred constraint trigger on a table of rows (id, slow) calls at COMMIT
/// (a slow row waits 20 ms there: a window at COMMIT).
void create_commit_order(pqxx::transaction_base& tx);

/// Reads lease_events (+ grant_order), fw_/fs_/fc_<lease> (+ commit_order).
void read_database(const std::string& conninfo, phase_bundle& b,
                   const std::vector<std::string>& leases);

} // namespace fault
