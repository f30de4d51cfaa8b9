/// @file phase.cpp
/// @brief Clusters, schema, workers and the recorded history of a phase.
#include "phase.hpp"

#include "common.hpp"
#include "downstream.hpp"
#include "edition.hpp"

#include <pqxx/pqxx>

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fault {

using nlohmann::json;

std::unique_ptr<pqxx::connection> patient_connection(const std::string& conninfo) {
    // The suite's own bookkeeping connections (schema, history), not the
    // product's: a busy server (64 contenders on 2 cores) may need more
    // than one connect_timeout to accept one. Bounded: 6 attempts, 1 s
    // apart, each bounded by the conninfo's connect_timeout (5 s).
    constexpr int attempts = 6;
    for (int i = 1;; ++i) {
        try {
            return std::make_unique<pqxx::connection>(conninfo);
        } catch (const pqxx::broken_connection& e) {
            if (i >= attempts)
                throw;
            std::cerr << "pglease_fault: connecting for the suite's own use, attempt " << i
                      << " of " << attempts << " failed (" << e.what() << "); retrying"
                      << std::endl;
            sleep_ms(1000);
        }
    }
}

void settle(int ms) {
    const auto end = mono_ns() + static_cast<std::int64_t>(ms) * 1000000;
    while (mono_ns() < end && !interrupted())
        sleep_ms(10);
}

phase::phase(const settings& s, std::string name, std::mt19937& rng)
    : m_s{s}
    , m_name{std::move(name)}
    , m_rng{rng}
    , m_dir{s.root + "/" + m_name} {
    std::filesystem::create_directories(m_dir);
    give_to_postgres(m_dir);
}

phase::~phase() {
    m_control.reset();
    for (auto& p : m_procs)
        terminate_process(p.pid, 100);
    m_pool.reset();
    for (auto& n : m_nodes)
        n->stop("immediate");
    if (!m_s.keep)
        for (auto& n : m_nodes)
            n->wipe(); // the data directories; histories stay until the end of the run
}

namespace {

/// Server settings of every cluster: PostgreSQL's defaults for everything
/// that bounds a session (no idle_in_transaction_session_timeout, no
/// statement_timeout): a writer stalled inside a fenced transaction must
/// be dealt with by pg_lease itself.
/// PGLEASE_FAULT_SERVER_CONF (lines separated by ';') is appended, for
/// diagnosis only (e.g. "log_connections = on;log_disconnections = on").
std::vector<std::string> base_conf() {
    std::vector<std::string> conf{"listen_addresses = '127.0.0.1'",
                                  "fsync = off",
                                  "max_connections = 320",
                                  "shared_buffers = '32MB'",
                                  "wal_level = replica",
                                  "max_wal_senders = 10",
                                  "wal_keep_size = '256MB'",
                                  "log_min_messages = warning",
                                  "log_line_prefix = '%m [%p] %a '"};
    if (sql_edition()) // a managed service: no pg_lease library to load
        conf.push_back("shared_preload_libraries = ''");
    if (const char* extra = std::getenv("PGLEASE_FAULT_SERVER_CONF")) {
        std::stringstream lines{extra};
        std::string line;
        while (std::getline(lines, line, ';'))
            if (!line.empty())
                conf.push_back(line);
    }
    return conf;
}

} // namespace

void phase::start_primary(const std::vector<std::string>& leases, bool faketime,
                          const std::vector<std::string>& extra) {
    m_leases = leases;
    auto conf = base_conf();
    conf.insert(conf.end(), extra.begin(), extra.end());
    if (m_hosts)
        conf.push_back("listen_addresses = '" + m_hosts->listen_addresses() + "'");
    m_nodes.push_back(std::make_unique<cluster>(m_dir, "node0"));
    m_nodes[0]->init(conf);
    if (m_hosts)
        std::ofstream{m_nodes[0]->data() + "/pg_hba.conf", std::ios::app} << net_hosts::hba_line()
                                                                          << "\n";
    m_nodes[0]->start(faketime);
    m_primary = 0;
    setup_schema();
    m_conninfo = "host=127.0.0.1 port=" + std::to_string(m_nodes[0]->port()) +
                 " user=" + app_user() + " dbname=" + app_db();
}

void create_commit_order(pqxx::transaction_base& tx) {
    tx.exec("CREATE SEQUENCE fault_order");
    tx.exec("CREATE TABLE commit_order (tbl text, write_id bigint, "
            "ord bigint NOT NULL DEFAULT nextval('fault_order'), PRIMARY KEY (tbl, write_id))");
    tx.exec(R"(CREATE FUNCTION fault_commit_order() RETURNS trigger LANGUAGE plpgsql
        SET search_path = public, pg_catalog AS $$
        BEGIN
            IF NEW.slow THEN PERFORM pg_sleep(0.02); END IF;  -- a window at COMMIT
            INSERT INTO public.commit_order (tbl, write_id) VALUES (TG_TABLE_NAME, NEW.id);
            RETURN NULL;
        END $$)");
}

void phase::setup_schema() {
    install_edition(primary());
    const auto conn = patient_connection(primary().owner_conninfo(app_db()));
    pqxx::nontransaction tx{*conn};
    create_commit_order(tx);
    tx.exec("CREATE TABLE grant_order (event_id bigint PRIMARY KEY, "
            "ord bigint NOT NULL DEFAULT nextval('fault_order'))");
    tx.exec(R"(CREATE FUNCTION fault_grant_order() RETURNS trigger LANGUAGE plpgsql
        SET search_path = public, pg_catalog AS $$
        BEGIN
            INSERT INTO public.grant_order (event_id) VALUES (NEW.id);
            RETURN NULL;
        END $$)");
    tx.exec("CREATE TRIGGER fault_grant_order AFTER INSERT ON lease_events "
            "FOR EACH ROW EXECUTE FUNCTION fault_grant_order()");
    for (const auto& l : m_leases) {
        const std::string fw = "fw_" + l, fs = "fs_" + l, fc = "fc_" + l;
        tx.exec("CREATE TABLE " + fw +
                " (id bigserial PRIMARY KEY, lease text NOT NULL, worker text NOT NULL, "
                "seq bigint NOT NULL, epoch bigint NOT NULL, ops text NOT NULL DEFAULT 'i', "
                "slow boolean NOT NULL DEFAULT false, UNIQUE (worker, seq))");
        tx.exec("CREATE CONSTRAINT TRIGGER fault_commit_order AFTER INSERT ON " + fw +
                " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "
                "fault_commit_order()");
        tx.exec("CREATE TABLE " + fs +
                " (id bigserial PRIMARY KEY, lease text NOT NULL, worker text NOT NULL, "
                "seq bigint NOT NULL, epoch bigint NOT NULL, rb boolean NOT NULL DEFAULT false)");
        tx.exec("CREATE TABLE " + fc +
                " (worker text PRIMARY KEY, lease text NOT NULL, n bigint NOT NULL, "
                "epoch bigint NOT NULL)");
        for (const auto& t : {fw, fs, fc})
            tx.exec("SELECT lease_fence(" + tx.quote(t) + ", " + tx.quote(l) + ")");
        grant_to_app(tx, {fw, fs, fc}, {fw + "_id_seq", fs + "_id_seq"});
    }
    grant_to_app(tx, {"commit_order", "grant_order"}, {"fault_order"});
}

cluster& phase::add_standby(const std::vector<std::string>& extra) {
    const auto name = "node" + std::to_string(m_nodes.size());
    m_nodes.push_back(std::make_unique<cluster>(m_dir, name));
    auto& n = *m_nodes.back();
    n.basebackup_from(primary(), extra);
    n.start();
    return n;
}

void phase::use_fleet_load(bool listen) {
    m_listen = m_listen && listen;
    m_sample_ms = 10;
    m_write_interval_ms = 50;
}

void phase::add_downstream() {
    m_downstream = setup_downstream(primary(), m_leases);
}

void phase::use_pool() {
    m_pool = std::make_unique<bouncer>(m_dir, primary());
    m_pool->start();
    m_conninfo = m_pool->conninfo();
    m_listen = false;
}

int phase::spawn_worker(const std::string& lease, bool storm, int host) {
    const std::string label = "p" + std::to_string(m_next_label++);
    const std::string hist = m_dir + "/" + label + ".jsonl";
    const auto [conninfo, downstream] = links_for(host);
    std::vector<std::string> argv{m_s.self,
                                  "worker",
                                  "--label=" + label,
                                  "--lease=" + lease,
                                  "--conninfo=" + conninfo,
                                  "--history=" + hist,
                                  "--ttl=" + std::to_string(m_s.ttl_ms),
                                  "--renew-deadline=" + std::to_string(m_s.renew_deadline_ms),
                                  "--retry=" + std::to_string(m_s.retry_ms),
                                  "--duration=3600000",
                                  "--workload=mixed",
                                  std::string{"--listen="} + (m_listen ? "1" : "0"),
                                  "--sample=" + std::to_string(m_sample_ms),
                                  "--write-interval=" + std::to_string(m_write_interval_ms),
                                  std::string{"--storm="} + (storm ? "1" : "0"),
                                  "--seed=" + std::to_string(m_rng())};
    if (!downstream.empty())
        argv.push_back("--downstream=" + downstream);
    if (m_write_timeout_ms > 0)
        argv.push_back("--write-timeout=" + std::to_string(m_write_timeout_ms));
    if (m_hosts) {
        auto in_host = m_hosts->exec_prefix(host);
        in_host.insert(in_host.end(), argv.begin(), argv.end());
        argv = std::move(in_host);
    }
    const int pid = spawn(argv, m_env, m_dir + "/" + label + ".log");
    m_procs.push_back({label, lease, hist, pid, host});
    return pid;
}

void phase::replace(int pid, bool storm) {
    for (auto& p : m_procs)
        if (p.pid == pid) {
            terminate_process(pid, 0);
            const auto lease = p.lease;
            spawn_worker(lease, storm, p.host);
            return;
        }
}

pqxx::result phase::ask(const std::function<pqxx::result(pqxx::nontransaction&)>& query) {
    const auto conninfo = primary().app_conninfo();
    if (m_control && (m_control_to != conninfo || !m_control->is_open()))
        m_control.reset();
    if (!m_control) {
        m_control = std::make_unique<pqxx::connection>(conninfo);
        m_control_to = conninfo;
    }
    try {
        pqxx::nontransaction tx{*m_control};
        return query(tx);
    } catch (const pqxx::broken_connection&) {
        m_control.reset();
        throw;
    }
}

std::optional<leader_info> phase::leader(const std::string& lease) {
    try {
        const auto r = ask([&](pqxx::nontransaction& tx) {
            return tx.exec_params(
                "SELECT holder, epoch FROM lease_status WHERE name = $1 AND valid", lease);
        });
        if (r.empty())
            return std::nullopt;
        const auto holder = r[0][0].as<std::string>();
        const auto label = holder.substr(0, holder.find('.'));
        for (const auto& p : m_procs)
            if (p.label == label && !reap(p.pid))
                return leader_info{label, holder, p.pid, r[0][1].as<std::int64_t>()};
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

std::optional<leader_info> phase::wait_leader(const std::string& lease, int timeout_ms) {
    const auto end = mono_ns() + static_cast<std::int64_t>(timeout_ms) * 1000000;
    while (mono_ns() < end && !interrupted()) {
        if (auto l = leader(lease))
            return l;
        sleep_ms(20);
    }
    return std::nullopt;
}

std::vector<worker_ref> phase::workers(const std::string& lease) {
    std::vector<worker_ref> out;
    for (const auto& p : m_procs)
        if (p.lease == lease && !reap(p.pid))
            out.push_back({p.label, p.history, p.pid});
    return out;
}

void read_database(const std::string& conninfo, phase_bundle& b,
                   const std::vector<std::string>& leases) {
    const auto conn = patient_connection(conninfo);
    pqxx::read_transaction tx{*conn};
    for (const auto& row :
         tx.exec("SELECT e.id, e.event, e.name, coalesce(e.holder, ''), e.epoch, "
                 "coalesce(g.ord, -1) FROM lease_events e LEFT JOIN grant_order g "
                 "ON g.event_id = e.id ORDER BY e.id"))
        b.events.push_back({row[0].as<std::int64_t>(), row[4].as<std::int64_t>(),
                            row[5].as<std::int64_t>(), row[1].as<std::string>(),
                            row[2].as<std::string>(), row[3].as<std::string>()});
    for (const auto& lease : leases) {
        const std::string fw = "fw_" + lease;
        for (const auto& row :
             tx.exec("SELECT w.worker, w.seq, w.epoch, coalesce(c.ord, -1), w.ops FROM " + fw +
                     " w LEFT JOIN commit_order c ON c.tbl = " + tx.quote(fw) +
                     " AND c.write_id = w.id"))
            b.writes.push_back({lease, row[0].as<std::string>(), row[4].as<std::string>(),
                                row[1].as<std::int64_t>(), row[2].as<std::int64_t>(),
                                row[3].as<std::int64_t>()});
        for (const auto& row : tx.exec("SELECT worker, seq, rb FROM fs_" + lease))
            b.scratch.push_back(
                {lease, row[0].as<std::string>(), row[1].as<std::int64_t>(), row[2].as<bool>()});
        for (const auto& row : tx.exec("SELECT worker, n FROM fc_" + lease))
            b.counters.push_back({lease, row[0].as<std::string>(), row[1].as<std::int64_t>()});
    }
}

phase_bundle phase::finish(const phase_expectations& expect, const phase_floors& floors,
                           const std::map<std::string, int>& planned) {
    phase_bundle b;
    b.phase = m_name;
    b.seed = m_s.seed;
    b.ttl_ms = m_s.ttl_ms;
    b.retry_ms = m_s.retry_ms;
    b.takeover_ms = m_s.takeover_ms;
    b.expect = expect;
    b.floors = floors;
    b.planned = planned;
    b.end = mono_ns();
    for (auto& p : m_procs)
        if (!reap(p.pid)) {
            kill(p.pid, SIGCONT);
            kill(p.pid, SIGTERM);
        }
    for (auto& p : m_procs)
        terminate_process(p.pid, 5000);
    for (const auto& p : m_procs) {
        auto h = read_history(p.history);
        b.history.insert(b.history.end(), std::make_move_iterator(h.begin()),
                         std::make_move_iterator(h.end()));
    }
    // Storm workers resign at random: each release is a leader change too.
    for (const auto& r : b.history)
        if (r.value("op", "") == "resign")
            m_faults.push_back({m_name + "-resign", r["L"], r["t"], r["t"], "", "", false, 0});
    b.faults = m_faults;
    read_database(primary().app_conninfo(), b, m_leases);
    if (!m_downstream.empty())
        read_downstream(m_downstream, b, m_leases);
    save_bundle(b, m_s.root + "/" + m_name + ".history.json");
    std::size_t acked = 0;
    for (const auto& r : b.history)
        if (r.value("op", "") == "write" && r.value("r", "") == "ok")
            ++acked;
    std::cout << "  " << m_name << ": " << m_procs.size() << " worker processes, "
              << b.history.size() << " records, " << b.events.size() << " lease events, "
              << b.writes.size() << " fenced transactions committed (" << acked << " acknowledged)";
    if (!m_downstream.empty())
        std::cout << ", downstream " << b.downstream_writes.size() << " rows and "
                  << b.raises.size() << " raises";
    std::cout << std::endl;
    return b;
}

} // namespace fault
