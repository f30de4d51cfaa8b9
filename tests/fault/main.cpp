/// @file main.cpp
/// @brief pglease_fault: the fault-injection suite. Owns its clusters,
/// runs worker processes electing leaders through the client library, a
/// nemesis injecting real faults, and the history checker.
///
///   pglease_fault --profile short [--seed N] [--keep] [--only KIND,...]
///   pglease_fault --profile soak [--duration 3600] [--seed N]
#include "checker.hpp"
#include "cluster.hpp"
#include "common.hpp"
#include "worker.hpp"

#include <pqxx/pqxx>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>

namespace fault {
namespace {

std::atomic<bool> g_interrupted{false};

void on_signal(int /*sig*/) {
    g_interrupted.store(true);
}

struct settings {
    std::string profile = "short";
    unsigned seed = 0;
    bool keep = false;
    int duration_s = 3600; ///< soak only
    std::set<std::string> only;
    int ttl_ms = 1000;
    int renew_deadline_ms = 600;
    int retry_ms = 200;
    std::string root;
    std::string self;
};

using json = nlohmann::json;

/// One phase: its clusters, its workers, its faults, then the checker.
class phase {
public:
    phase(const settings& s, std::string name, std::mt19937& rng)
        : m_s{s}
        , m_name{std::move(name)}
        , m_rng{rng}
        , m_dir{s.root + "/" + m_name} {
        std::filesystem::create_directories(m_dir);
        give_to_postgres(m_dir);
    }

    ~phase() {
        for (auto& p : m_procs)
            terminate_process(p.pid, 100);
        m_pool.reset();
        for (auto& n : m_nodes)
            n->stop("immediate");
        if (!m_s.keep)
            std::filesystem::remove_all(m_dir);
    }
    phase(const phase&) = delete;
    phase& operator=(const phase&) = delete;
    phase(phase&&) = delete;
    phase& operator=(phase&&) = delete;

    static std::vector<std::string> base_conf(int ttl_ms) {
        return {"listen_addresses = '127.0.0.1'", "fsync = off", "max_connections = 320",
                "shared_buffers = '32MB'", "wal_level = replica", "max_wal_senders = 10",
                "wal_keep_size = '256MB'",
                // A writer stopped inside a fenced transaction holds the
                // share lock on the lease row; without this bound it would
                // block every takeover for as long as it is stopped.
                "idle_in_transaction_session_timeout = '" + std::to_string(ttl_ms / 2) + "ms'",
                "log_min_messages = warning", "log_line_prefix = '%m [%p] %a '"};
    }

    /// initdb + start the primary, create the extension and the schema.
    void start_primary(const std::vector<std::string>& leases, bool faketime,
                       const std::vector<std::string>& extra = {}) {
        m_leases = leases;
        auto conf = base_conf(m_s.ttl_ms);
        conf.insert(conf.end(), extra.begin(), extra.end());
        m_nodes.push_back(std::make_unique<cluster>(m_dir, "node0"));
        m_nodes[0]->init(conf);
        m_nodes[0]->start(faketime);
        m_primary = 0;
        setup_schema();
        m_conninfo = "host=127.0.0.1 port=" + std::to_string(m_nodes[0]->port()) +
                     " user=postgres dbname=postgres";
    }

    void setup_schema() {
        pqxx::connection c{primary().conninfo()};
        pqxx::nontransaction tx{c};
        tx.exec("CREATE EXTENSION pg_lease");
        tx.exec("CREATE SEQUENCE fault_order");
        tx.exec("CREATE TABLE commit_order (tbl text, write_id bigint, "
                "ord bigint NOT NULL DEFAULT nextval('fault_order'), PRIMARY KEY (tbl, write_id))");
        tx.exec("CREATE TABLE grant_order (event_id bigint PRIMARY KEY, "
                "ord bigint NOT NULL DEFAULT nextval('fault_order'))");
        tx.exec(R"(CREATE FUNCTION fault_commit_order() RETURNS trigger LANGUAGE plpgsql
            SET search_path = public, pg_catalog AS $$
            BEGIN
                IF NEW.slow THEN PERFORM pg_sleep(0.02); END IF;  -- a window at COMMIT
                INSERT INTO public.commit_order (tbl, write_id) VALUES (TG_TABLE_NAME, NEW.id);
                RETURN NULL;
            END $$)");
        tx.exec(R"(CREATE FUNCTION fault_grant_order() RETURNS trigger LANGUAGE plpgsql
            SET search_path = public, pg_catalog AS $$
            BEGIN
                INSERT INTO public.grant_order (event_id) VALUES (NEW.id);
                RETURN NULL;
            END $$)");
        tx.exec("CREATE TRIGGER fault_grant_order AFTER INSERT ON lease_events "
                "FOR EACH ROW EXECUTE FUNCTION fault_grant_order()");
        for (const auto& l : m_leases) {
            const std::string t = "fw_" + l;
            tx.exec("CREATE TABLE " + t +
                    " (id bigserial PRIMARY KEY, lease text NOT NULL, worker text NOT NULL, "
                    "seq bigint NOT NULL, epoch bigint NOT NULL, slow boolean NOT NULL DEFAULT "
                    "false, UNIQUE (worker, seq))");
            tx.exec("CREATE CONSTRAINT TRIGGER fault_commit_order AFTER INSERT ON " + t +
                    " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "
                    "fault_commit_order()");
            tx.exec("SELECT lease_fence(" + tx.quote(t) + ", " + tx.quote(l) + ")");
        }
    }

    cluster& primary() { return *m_nodes[static_cast<std::size_t>(m_primary)]; }

    /// A streaming standby of the primary (not for the faketime phases).
    cluster& add_standby(const std::vector<std::string>& extra) {
        const auto name = "node" + std::to_string(m_nodes.size());
        m_nodes.push_back(std::make_unique<cluster>(m_dir, name));
        auto& n = *m_nodes.back();
        n.basebackup_from(primary(), extra);
        n.start();
        return n;
    }

    void set_worker_conninfo(std::string c) { m_conninfo = std::move(c); }
    void set_worker_env(std::vector<std::string> env) { m_env = std::move(env); }
    void use_pool() {
        m_pool = std::make_unique<bouncer>(m_dir, primary());
        m_pool->start();
        m_conninfo = m_pool->conninfo();
        m_listen = false;
    }

    int spawn_worker(const std::string& lease, bool storm, int duration_ms) {
        const std::string label = "p" + std::to_string(m_next_label++);
        const std::string hist = m_dir + "/" + label + ".jsonl";
        std::vector<std::string> argv{m_s.self,
                                      "worker",
                                      "--label=" + label,
                                      "--lease=" + lease,
                                      "--conninfo=" + m_conninfo,
                                      "--history=" + hist,
                                      "--ttl=" + std::to_string(m_s.ttl_ms),
                                      "--renew-deadline=" + std::to_string(m_s.renew_deadline_ms),
                                      "--retry=" + std::to_string(m_s.retry_ms),
                                      "--duration=" + std::to_string(duration_ms),
                                      std::string{"--listen="} + (m_listen ? "1" : "0"),
                                      std::string{"--storm="} + (storm ? "1" : "0"),
                                      "--seed=" + std::to_string(m_rng())};
        const int pid = spawn(argv, m_env, m_dir + "/" + label + ".log");
        m_procs.push_back({label, lease, hist, pid});
        return pid;
    }

    /// The label and pid of the process whose identity holds @p lease now.
    std::optional<std::pair<std::string, int>> leader(const std::string& lease) {
        try {
            pqxx::connection c{primary().conninfo()};
            pqxx::nontransaction tx{c};
            auto r =
                tx.exec_params("SELECT holder FROM lease_status WHERE name = $1 AND valid", lease);
            if (r.empty())
                return std::nullopt;
            const auto holder = r[0][0].as<std::string>();
            const auto label = holder.substr(0, holder.find('.'));
            for (const auto& p : m_procs)
                if (p.label == label && !reap(p.pid))
                    return std::make_pair(label, p.pid);
        } catch (const std::exception&) {
        }
        return std::nullopt;
    }

    /// Waits up to @p timeout_ms for a leader of @p lease.
    std::optional<std::pair<std::string, int>> wait_leader(const std::string& lease,
                                                           int timeout_ms) {
        const auto end = mono_ns() + static_cast<std::int64_t>(timeout_ms) * 1000000;
        while (mono_ns() < end && !g_interrupted.load()) {
            if (auto l = leader(lease))
                return l;
            sleep_ms(20);
        }
        return std::nullopt;
    }

    void record(const std::string& kind, const std::string& lease, std::int64_t t,
                const std::string& detail) {
        m_faults.push_back({kind, lease, t, detail});
    }

    /// Replaces the process @p pid (killed) by a fresh worker on the same lease.
    void replace(int pid, bool storm, int duration_ms) {
        for (auto& p : m_procs)
            if (p.pid == pid) {
                terminate_process(pid, 0);
                const auto lease = p.lease;
                spawn_worker(lease, storm, duration_ms);
                return;
            }
    }

    /// Picks a random element of @p v.
    template <typename T>
    const T& pick(const std::vector<T>& v) {
        std::uniform_int_distribution<std::size_t> d{0, v.size() - 1};
        return v[d(m_rng)];
    }
    int uniform(int lo, int hi) { return std::uniform_int_distribution<int>{lo, hi}(m_rng); }

    /// Stops the workers, reads everything, checks.
    phase_report finish(const phase_expectations& expect, const std::string& resign_kind = {}) {
        for (auto& p : m_procs)
            if (!reap(p.pid))
                kill(p.pid, SIGTERM);
        for (auto& p : m_procs)
            terminate_process(p.pid, 5000);
        std::vector<json> history;
        for (const auto& p : m_procs) {
            auto h = read_history(p.history);
            history.insert(history.end(), std::make_move_iterator(h.begin()),
                           std::make_move_iterator(h.end()));
        }
        if (!resign_kind.empty())
            for (const auto& r : history)
                if (r.value("op", "") == "resign")
                    m_faults.push_back({resign_kind, r["L"], r["t"], "random release"});
        std::vector<db_event> events;
        std::vector<db_write> writes;
        read_database(primary().conninfo(), m_leases, events, writes);
        auto rep = check_phase(m_name, history, events, writes, m_faults, m_s.ttl_ms, m_s.retry_ms,
                               expect);
        std::size_t acked = 0;
        for (const auto& r : history)
            if (r.value("op", "") == "write" && r.value("r", "") == "ok")
                ++acked;
        std::cout << "  " << m_name << ": " << m_procs.size() << " worker processes, "
                  << history.size() << " records, " << events.size() << " lease events, "
                  << writes.size() << " fenced rows (" << acked << " acknowledged)" << std::endl;
        return rep;
    }

    std::vector<std::unique_ptr<cluster>>& nodes() { return m_nodes; }
    void set_primary(int i) { m_primary = i; }
    [[nodiscard]] int primary_index() const { return m_primary; }
    [[nodiscard]] const std::string& dir() const { return m_dir; }

    const settings& m_s;

private:
    struct proc {
        std::string label, lease, history;
        int pid;
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
    std::vector<std::string> m_env;
    bool m_listen = true;
};

// ---------------------------------------------------------------------------
// The nemesis: one function per fault kind. Each injects for real and
// records the CLOCK_MONOTONIC time at which the fault began.

void settle(int ms) {
    const auto end = mono_ns() + static_cast<std::int64_t>(ms) * 1000000;
    while (mono_ns() < end && !g_interrupted.load())
        sleep_ms(10);
}

/// Kleppmann's pause: SIGSTOP the leader for 0.5, 1, 2, 5 x ttl.
void inject_pause(phase& ph, const std::string& lease, int i) {
    static const double mult[] = {0.5, 1, 2, 5};
    const double m = mult[i % 4];
    auto l = ph.wait_leader(lease, 10000);
    if (!l)
        return;
    const auto t = mono_ns();
    kill(l->second, SIGSTOP);
    std::ostringstream d;
    d << m << "x ttl";
    ph.record("pause", lease, t, d.str());
    settle(static_cast<int>(m * ph.m_s.ttl_ms));
    kill(l->second, SIGCONT);
}

void inject_kill(phase& ph, const std::string& lease, bool storm, int life,
                 const std::string& kind = "kill") {
    auto l = ph.wait_leader(lease, 10000);
    if (!l)
        return;
    const auto t = mono_ns();
    kill(l->second, SIGKILL);
    ph.record(kind, lease, t, "");
    ph.replace(l->second, storm, life);
}

/// pg_terminate_backend of the leader's renew or write session, aiming at
/// a state: "renew" (mid-renew: active), "mid-write" (INSERT or the sleep
/// inside the transaction), "at-commit" (COMMIT running the deferred trigger).
void inject_terminate(phase& ph, const std::string& lease, const std::string& aim) {
    auto l = ph.wait_leader(lease, 10000);
    if (!l)
        return;
    const bool renew = aim == "renew";
    const std::string app = l->first + (renew ? "-renew" : "-write");
    try {
        pqxx::connection c{ph.primary().conninfo()};
        pqxx::nontransaction tx{c};
        const auto end = mono_ns() + 1500000000LL;
        std::string hit;
        int pid = 0;
        while (mono_ns() < end) {
            auto r = tx.exec_params(
                "SELECT pid, state, query FROM pg_stat_activity WHERE application_name = $1", app);
            if (!r.empty()) {
                pid = r[0][0].as<int>();
                const auto state = r[0][1].is_null() ? "" : r[0][1].as<std::string>();
                const auto query = r[0][2].is_null() ? "" : r[0][2].as<std::string>();
                std::string where = state;
                if (state == "active") {
                    if (renew)
                        where = "mid-renew";
                    else if (query.rfind("COMMIT", 0) == 0)
                        where = "at-commit";
                    else
                        where = "mid-write";
                }
                if ((renew && where == "mid-renew") || where == aim) {
                    hit = where;
                    break;
                }
                hit = where;
            }
        }
        if (pid == 0)
            return;
        const auto t = mono_ns();
        auto r = tx.exec_params("SELECT pg_terminate_backend($1)", pid);
        if (r[0][0].as<bool>())
            ph.record(renew ? "terminate-renew" : "terminate-write", lease, t, hit);
    } catch (const std::exception& e) {
        std::cerr << "terminate: " << e.what() << std::endl;
    }
}

void inject_crash(phase& ph) {
    const auto t = mono_ns();
    ph.primary().stop("immediate");
    ph.record("crash", "", t, "");
    settle(ph.uniform(0, 300));
    ph.primary().start(false);
}

/// Steps the server's wall clock by @p step seconds and the workers' wall
/// clocks by -step (their monotonic clocks do not move).
void inject_clock(phase& ph, int& server_offset, int step) {
    server_offset += step;
    const auto t = mono_ns();
    ph.primary().set_clock_offset(server_offset);
    {
        const std::string tmp = ph.dir() + "/worker_clock.tmp";
        {
            std::ofstream out{tmp};
            out << (server_offset > 0 ? "-" : "+") << std::abs(server_offset) << "\n";
        }
        std::rename(tmp.c_str(), (ph.dir() + "/worker_clock").c_str());
    }
    ph.record(step > 0 ? "clock-forward" : "clock-back", "", t,
              (step > 0 ? "+" : "") + std::to_string(step) + "s");
}

void wait_replication(phase& ph, bool sync) {
    // Until the standby streams (and, for sync, is the synchronous one) and
    // has flushed everything written so far.
    const auto end = mono_ns() + 60000000000LL;
    while (mono_ns() < end && !g_interrupted.load()) {
        try {
            pqxx::connection c{ph.primary().conninfo()};
            pqxx::nontransaction tx{c};
            auto r = tx.exec("SELECT sync_state, flush_lsn >= pg_current_wal_lsn() "
                             "FROM pg_stat_replication WHERE state = 'streaming'");
            if (!r.empty() && (!sync || r[0][0].as<std::string>() == "sync") &&
                !r[0][1].is_null() && r[0][1].as<bool>())
                return;
        } catch (const std::exception&) {
        }
        sleep_ms(50);
    }
}

/// Kills the primary, promotes the standby, rebuilds a standby in the dead
/// primary's place (same port) from the new primary.
void inject_failover(phase& ph, bool sync) {
    const std::string kind = sync ? "failover-sync" : "failover-async";
    auto& nodes = ph.nodes();
    const int old_p = ph.primary_index();
    const int new_p = 1 - old_p;
    const auto t = mono_ns();
    nodes[static_cast<std::size_t>(old_p)]->stop("immediate");
    ph.record(kind, "", t, "");
    auto& np = *nodes[static_cast<std::size_t>(new_p)];
    if (sync) // no standby yet: commits would wait for one
        np.configure("synchronous_standby_names = ''", false);
    np.promote();
    ph.set_primary(new_p);
    if (sync)
        np.configure("synchronous_standby_names = ''", true);
    auto& op = *nodes[static_cast<std::size_t>(old_p)];
    op.wipe();
    op.basebackup_from(np, {"port = " + std::to_string(op.port())});
    op.start();
    if (sync)
        np.configure("synchronous_standby_names = '*'", true);
    wait_replication(ph, sync);
}

// ---------------------------------------------------------------------------

struct plan {
    int pause = 12, kill = 10, terminate = 10, crash = 10, clock = 20;
    int storm16_s = 20, storm64_s = 25, pool_s = 20, storm_kill_every_ms = 1800;
    int failover = 10;
    int mixed_s = 0; ///< soak: a mixed schedule of the single-cluster faults
};

phase_report run_single(const settings& s, std::mt19937& rng, const std::string& name,
                        const std::function<void(phase&)>& body, int workers,
                        bool faketime = false) {
    phase ph{s, name, rng};
    ph.start_primary({"l0"}, faketime);
    if (faketime)
        ph.set_worker_env({std::string{"LD_PRELOAD="} + faketime_lib, "FAKETIME_NO_CACHE=1",
                           "FAKETIME_DONT_FAKE_MONOTONIC=1",
                           "FAKETIME_TIMESTAMP_FILE=" + ph.dir() + "/worker_clock"});
    {
        std::ofstream out{ph.dir() + "/worker_clock"};
        out << "+0\n";
    }
    const int life = 3600000;
    for (int i = 0; i < workers; ++i)
        ph.spawn_worker("l0", false, life);
    ph.wait_leader("l0", 15000);
    body(ph);
    settle(2 * s.ttl_ms);
    phase_expectations ex;
    ex.overlaps_allowed = faketime;
    return ph.finish(ex);
}

std::vector<std::pair<std::string, phase_report>> run_profile(const settings& s, const plan& p,
                                                              std::mt19937& rng) {
    std::vector<std::pair<std::string, phase_report>> out;
    const int life = 3600000;
    auto want = [&](const std::string& k) { return s.only.empty() || s.only.count(k) != 0; };
    auto run = [&](const std::string& k, auto&& fn) {
        if (!want(k) || g_interrupted.load())
            return;
        std::cout << "phase " << k << " ..." << std::endl;
        const auto t0 = mono_ns();
        out.emplace_back(k, fn());
        std::cout << "  " << k << " took " << (mono_ns() - t0) / 1000000000 << " s" << std::endl;
    };

    if (p.mixed_s > 0)
        run("mixed", [&] {
            return run_single(
                s, rng, "mixed",
                [&](phase& ph) {
                    const auto end = mono_ns() + static_cast<std::int64_t>(p.mixed_s) * 1000000000;
                    int server_offset = 0, i = 0;
                    while (mono_ns() < end && !g_interrupted.load()) {
                        switch (ph.uniform(0, 5)) {
                        case 0:
                            inject_pause(ph, "l0", i);
                            break;
                        case 1:
                            inject_kill(ph, "l0", false, life);
                            break;
                        case 2:
                            inject_terminate(ph, "l0", "renew");
                            break;
                        case 3:
                            inject_terminate(ph, "l0",
                                             ph.uniform(0, 1) ? "at-commit" : "mid-write");
                            break;
                        case 4:
                            inject_crash(ph);
                            break;
                        default: {
                            // the clock returns to true time every other step
                            const int step = server_offset != 0 ? -server_offset
                                             : ph.uniform(0, 1) ? 3
                                                                : -3;
                            inject_clock(ph, server_offset, step);
                        }
                        }
                        ++i;
                        settle(s.ttl_ms + ph.uniform(0, 2 * s.ttl_ms));
                    }
                },
                3, true);
        });

    run("pause", [&] {
        return run_single(
            s, rng, "pause",
            [&](phase& ph) {
                for (int i = 0; i < p.pause && !g_interrupted.load(); ++i) {
                    inject_pause(ph, "l0", i);
                    settle(s.ttl_ms * 3 / 2 + ph.uniform(0, 500));
                }
            },
            3);
    });
    run("kill", [&] {
        return run_single(
            s, rng, "kill",
            [&](phase& ph) {
                for (int i = 0; i < p.kill && !g_interrupted.load(); ++i) {
                    inject_kill(ph, "l0", false, life);
                    settle(s.ttl_ms * 3 / 2 + ph.uniform(0, 500));
                }
            },
            3);
    });
    run("terminate", [&] {
        return run_single(
            s, rng, "terminate",
            [&](phase& ph) {
                static const char* aims[] = {"mid-write", "at-commit"};
                for (int i = 0; i < p.terminate && !g_interrupted.load(); ++i) {
                    inject_terminate(ph, "l0", "renew");
                    settle(s.ttl_ms / 2 + ph.uniform(0, 300));
                    inject_terminate(ph, "l0", aims[i % 2]);
                    settle(s.ttl_ms / 2 + ph.uniform(0, 300));
                }
            },
            3);
    });
    run("crash", [&] {
        return run_single(
            s, rng, "crash",
            [&](phase& ph) {
                for (int i = 0; i < p.crash && !g_interrupted.load(); ++i) {
                    inject_crash(ph);
                    settle(2 * s.ttl_ms + ph.uniform(0, 1000));
                }
            },
            3);
    });
    run("clock", [&] {
        return run_single(
            s, rng, "clock",
            [&](phase& ph) {
                int server_offset = 0;
                static const int sizes[] = {2, 3, 5};
                for (int i = 0; i < p.clock && !g_interrupted.load(); ++i) {
                    // forward by k, back to true time; back by k, forward to true time
                    const int k = std::max(1, sizes[(i / 2) % 3] * s.ttl_ms / 1000);
                    int step = 0;
                    if (server_offset != 0)
                        step = -server_offset;
                    else
                        step = (i / 2) % 2 == 0 ? k : -k;
                    inject_clock(ph, server_offset, step);
                    settle(2 * s.ttl_ms + (step < 0 ? -step * 1000 : 0) / 2 + ph.uniform(0, 500));
                }
                if (server_offset != 0)
                    inject_clock(ph, server_offset, -server_offset);
            },
            3, true);
    });

    auto storm = [&](const std::string& name, int workers, int nleases, int seconds, bool pool) {
        phase ph{s, name, rng};
        std::vector<std::string> leases;
        for (int i = 0; i < nleases; ++i)
            leases.push_back("l" + std::to_string(i));
        ph.start_primary(leases, false);
        if (pool)
            ph.use_pool();
        for (int i = 0; i < workers; ++i)
            ph.spawn_worker(leases[static_cast<std::size_t>(i % nleases)], true, life);
        const auto end = mono_ns() + static_cast<std::int64_t>(seconds) * 1000000000;
        while (mono_ns() < end && !g_interrupted.load()) {
            settle(p.storm_kill_every_ms / 2 + ph.uniform(0, p.storm_kill_every_ms));
            inject_kill(ph, ph.pick(leases), true, life, name);
        }
        settle(2 * s.ttl_ms);
        return ph.finish({}, name);
    };
    run("storm16", [&] { return storm("storm16", 16, 4, p.storm16_s, false); });
    run("storm64", [&] { return storm("storm64", 64, 4, p.storm64_s, false); });
    run("pgbouncer", [&] { return storm("pgbouncer", 16, 2, p.pool_s, true); });

    auto failover = [&](bool sync) {
        const std::string name = sync ? "failover-sync" : "failover-async";
        phase ph{s, name, rng};
        // Synchronous replication is switched on once the standby streams
        // (before that, every commit would wait for a standby that is not
        // there yet).
        ph.start_primary({"l0"}, false, {"synchronous_commit = on"});
        ph.add_standby({});
        if (sync)
            ph.primary().configure("synchronous_standby_names = '*'", true);
        wait_replication(ph, sync);
        const auto& n = ph.nodes();
        ph.set_worker_conninfo("host=127.0.0.1,127.0.0.1 port=" + std::to_string(n[0]->port()) +
                               "," + std::to_string(n[1]->port()) +
                               " user=postgres dbname=postgres target_session_attrs=read-write");
        for (int i = 0; i < 3; ++i)
            ph.spawn_worker("l0", false, life);
        ph.wait_leader("l0", 15000);
        for (int i = 0; i < p.failover && !g_interrupted.load(); ++i) {
            settle(s.ttl_ms + ph.uniform(0, 1000));
            inject_failover(ph, sync);
            ph.wait_leader("l0", 15000);
        }
        settle(2 * s.ttl_ms);
        phase_expectations ex;
        ex.lost_acks_allowed = !sync;
        return ph.finish(ex);
    };
    run("failover-async", [&] { return failover(false); });
    run("failover-sync", [&] { return failover(true); });
    return out;
}

double percentile(std::vector<double> v, double q) {
    if (v.empty())
        return NAN;
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
}

int report(const settings& s, const std::vector<std::pair<std::string, phase_report>>& phases) {
    std::map<std::string, kind_stats> rows;
    std::vector<std::string> order;
    std::vector<std::string> violations;
    for (const auto& [name, rep] : phases) {
        for (const auto& [kind, k] : rep.kinds) {
            if (!rows.count(kind))
                order.push_back(kind);
            auto& r = rows[kind];
            r.injections += k.injections;
            r.stale_refused += k.stale_refused;
            r.stale_accepted += k.stale_accepted;
            r.acked_lost += k.acked_lost;
            r.refused_present += k.refused_present;
            r.reissued += k.reissued;
            r.overlaps += k.overlaps;
            r.overlaps_send += k.overlaps_send;
            r.unknown += k.unknown;
            r.no_recovery += k.no_recovery;
            r.recovery_ms.insert(r.recovery_ms.end(), k.recovery_ms.begin(), k.recovery_ms.end());
            for (const auto& [n, c] : k.notes)
                r.notes[n] += c;
        }
        violations.insert(violations.end(), rep.violations.begin(), rep.violations.end());
    }
    const double bound = s.ttl_ms + s.retry_ms * 1.2;
    std::cout << "\nfault-injection results: profile " << s.profile << ", seed " << s.seed
              << ", ttl " << s.ttl_ms << " ms, retry " << s.retry_ms
              << " ms (failover bound ttl + retry x jitter = " << bound << " ms)\n\n";
    std::cout << "| fault kind | injections | stale writes refused | stale writes accepted | "
                 "acknowledged writes lost | epochs reissued | overlapping beliefs | "
                 "failover p50 / p99 (ms) |\n";
    std::cout << "|---|---:|---:|---:|---:|---:|---:|---|\n";
    for (const auto& kind : order) {
        const auto& r = rows[kind];
        std::ostringstream fo;
        if (r.recovery_ms.empty())
            fo << "-";
        else
            fo << std::fixed << std::setprecision(0) << percentile(r.recovery_ms, 0.5) << " / "
               << percentile(r.recovery_ms, 0.99);
        if (r.no_recovery)
            fo << " (" << r.no_recovery << " none)";
        std::cout << "| " << kind << " | " << r.injections << " | " << r.stale_refused << " | "
                  << r.stale_accepted << " | " << r.acked_lost << " | " << r.reissued << " | "
                  << r.overlaps << " | " << fo.str() << " |\n";
    }
    std::cout << "\nnotes per fault kind (unknown-outcome writes, refused-but-present writes, "
                 "overlaps with beliefs counted from the request's send time, injection "
                 "details):\n";
    for (const auto& kind : order) {
        const auto& r = rows[kind];
        std::cout << "  " << kind << ": unknown " << r.unknown << ", refused-present "
                  << r.refused_present << ", send-time overlaps " << r.overlaps_send;
        for (const auto& [n, c] : r.notes)
            std::cout << ", " << n << " x" << c;
        std::cout << "\n";
    }
    if (!violations.empty()) {
        std::cout << "\nVIOLATIONS (" << violations.size() << "):\n";
        for (const auto& v : violations)
            std::cout << v << "\n";
        std::cout << "replay with: --profile " << s.profile << " --seed " << s.seed << "\n";
        return 1;
    }
    std::cout << "\nno violations (seed " << s.seed << ")\n";
    return 0;
}

/// Stops every cluster and pgbouncer under @p root and removes it.
void cleanup_root(const std::string& root, bool keep) {
    std::error_code ec;
    if (!std::filesystem::exists(root, ec))
        return;
    for (auto it = std::filesystem::recursive_directory_iterator{root, ec};
         it != std::filesystem::recursive_directory_iterator{}; it.increment(ec)) {
        if (ec)
            break;
        if (it.depth() > 3) {
            it.disable_recursion_pending();
            continue;
        }
        const auto& path = it->path();
        if (path.filename() == "postmaster.pid")
            run_command({std::string{pg_bin} + "/pg_ctl", "-D", path.parent_path().string(), "-m",
                         "immediate", "-w", "-t", "30", "stop"},
                        true, {}, "", 40);
        if (path.filename() == "pgbouncer.pid") {
            std::ifstream in{path};
            int pid = 0;
            if (in >> pid && pid > 0)
                kill(pid, SIGKILL);
        }
    }
    if (!keep)
        std::filesystem::remove_all(root, ec);
}

/// A child that outlives this process only to clean up after it: if the
/// suite is killed (ctest's timeout sends SIGKILL), its clusters must not
/// be left running. Workers die with it through PR_SET_PDEATHSIG.
void start_guardian(const std::string& root, bool keep) {
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid != 0)
        return;
    setsid();
    const int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    while (getppid() == parent)
        sleep_ms(200);
    cleanup_root(root, keep);
    _exit(0);
}

int usage() {
    std::cerr << "usage: pglease_fault [--profile short|soak] [--seed N] [--duration S] "
                 "[--only kind,...] [--keep]\n";
    return 2;
}

} // namespace
} // namespace fault

int main(int argc, char** argv) {
    using namespace fault;
    if (argc > 1 && std::strcmp(argv[1], "worker") == 0) {
        try {
            return run_worker(parse_worker_args(argc - 2, argv + 2));
        } catch (const std::exception& e) {
            std::cerr << "worker: " << e.what() << std::endl;
            return 1;
        }
    }
    settings s;
    s.seed = static_cast<unsigned>(std::random_device{}());
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc)
                throw std::runtime_error("missing value for " + a);
            return argv[++i];
        };
        try {
            if (a == "--profile")
                s.profile = next();
            else if (a == "--seed")
                s.seed = static_cast<unsigned>(std::stoul(next()));
            else if (a == "--duration")
                s.duration_s = std::stoi(next());
            else if (a == "--keep")
                s.keep = true;
            else if (a == "--only") {
                std::stringstream ss{next()};
                std::string k;
                while (std::getline(ss, k, ','))
                    s.only.insert(k);
            } else
                return usage();
        } catch (const std::exception&) {
            return usage();
        }
    }
    if (s.profile != "short" && s.profile != "soak")
        return usage();
    char self[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    s.self.assign(self, static_cast<std::size_t>(n));
    char tmpl[] = "/tmp/pglease_fault.XXXXXX";
    if (!mkdtemp(tmpl))
        return 1;
    s.root = tmpl;
    give_to_postgres(s.root);

    start_guardian(s.root, s.keep);

    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);

    plan p;
    if (s.profile == "soak") {
        // About a third of the time on a mixed schedule, the rest on the
        // same kinds as the short profile with counts scaled up.
        // The short profile's phases take about 330 s on 2 cores.
        const double f = std::max(1.0, s.duration_s * 2.0 / 3.0 / 330.0);
        p.mixed_s = s.duration_s / 3;
        p.pause = static_cast<int>(12 * f);
        p.kill = p.terminate = p.crash = static_cast<int>(10 * f);
        p.clock = 2 * p.crash;
        p.storm16_s = static_cast<int>(20 * f);
        p.storm64_s = static_cast<int>(25 * f);
        p.pool_s = static_cast<int>(20 * f);
        p.failover = static_cast<int>(10 * f);
    }
    std::cout << "pglease_fault: profile " << s.profile << ", seed " << s.seed << ", work dir "
              << s.root << std::endl;
    std::srand(s.seed);
    std::mt19937 rng{s.seed};
    int status = 1;
    try {
        auto phases = run_profile(s, p, rng);
        status = report(s, phases);
        if (g_interrupted.load()) {
            std::cout << "interrupted\n";
            status = 1;
        }
    } catch (const std::exception& e) {
        std::cerr << "pglease_fault: " << e.what() << std::endl;
        status = 1;
    }
    cleanup_root(s.root, s.keep);
    return status;
}
