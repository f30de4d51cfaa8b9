/// @file worker.cpp
/// @brief The worker process. The elector runs on a recording backend (a
/// decorator over pq_backend) so every acquire/renew/release is recorded
/// with its send and reply times; the writer writes with the last epoch it
/// was granted until the server refuses it (a leader that keeps believing,
/// Kleppmann's paused process): only the fence stands between it and the
/// data, which is what the suite tests.
#include "worker.hpp"

#include "common.hpp"

#include <pglease/pglease.hpp>
#include <pqxx/pqxx>

#include <signal.h>

#include <atomic>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

namespace fault {
namespace {

std::atomic<bool> g_stop{false};

void on_term(int /*sig*/) {
    g_stop.store(true);
}

using nlohmann::json;

/// pq_backend, recording each lease call: send time t0, reply time t,
/// result r (ok / no / fail) and the epoch.
class recording_backend final : public pglease::backend {
public:
    recording_backend(pglease::connection_options opts, history_file& h)
        : m_inner{std::move(opts)}
        , m_h{h} {}

    pglease::acquire_reply acquire(const std::string& name, const std::string& holder,
                                   std::chrono::milliseconds ttl) override {
        const auto t0 = mono_ns();
        try {
            auto reply = m_inner.acquire(name, holder, ttl);
            m_h.append({{"op", "acq"},
                        {"t0", t0},
                        {"t", mono_ns()},
                        {"w", holder},
                        {"L", name},
                        {"r", reply.acquired ? "ok" : "no"},
                        {"e", reply.epoch},
                        {"h", reply.holder}});
            return reply;
        } catch (const std::exception& e) {
            m_h.append({{"op", "acq"},
                        {"t0", t0},
                        {"t", mono_ns()},
                        {"w", holder},
                        {"L", name},
                        {"r", "fail"},
                        {"x", e.what()}});
            throw;
        }
    }

    std::optional<std::chrono::microseconds> renew(const std::string& name,
                                                   const std::string& holder, std::int64_t epoch,
                                                   std::chrono::milliseconds ttl) override {
        const auto t0 = mono_ns();
        try {
            auto left = m_inner.renew(name, holder, epoch, ttl);
            m_h.append({{"op", "renew"},
                        {"t0", t0},
                        {"t", mono_ns()},
                        {"w", holder},
                        {"L", name},
                        {"r", left ? "ok" : "no"},
                        {"e", epoch}});
            return left;
        } catch (const std::exception& e) {
            m_h.append({{"op", "renew"},
                        {"t0", t0},
                        {"t", mono_ns()},
                        {"w", holder},
                        {"L", name},
                        {"r", "fail"},
                        {"e", epoch},
                        {"x", e.what()}});
            throw;
        }
    }

    bool release(const std::string& name, const std::string& holder, std::int64_t epoch) override {
        // Recorded before sending: the lease stopped believing already, and a
        // SIGKILL after the server freed it must not leave the belief open.
        m_h.append({{"op", "rel"},
                    {"ph", "inv"},
                    {"t", mono_ns()},
                    {"w", holder},
                    {"L", name},
                    {"e", epoch}});
        const auto t0 = mono_ns();
        try {
            const bool freed = m_inner.release(name, holder, epoch);
            m_h.append({{"op", "rel"},
                        {"t0", t0},
                        {"t", mono_ns()},
                        {"w", holder},
                        {"L", name},
                        {"r", freed ? "ok" : "no"},
                        {"e", epoch}});
            return freed;
        } catch (const std::exception& e) {
            m_h.append({{"op", "rel"},
                        {"t0", t0},
                        {"t", mono_ns()},
                        {"w", holder},
                        {"L", name},
                        {"r", "fail"},
                        {"e", epoch},
                        {"x", e.what()}});
            throw;
        }
    }

    bool revoke(const std::string& name) override { return m_inner.revoke(name); }
    std::optional<pglease::lease_record> status(const std::string& name) override {
        return m_inner.status(name);
    }
    bool listen() override { return m_inner.listen(); }
    bool wait_for_change(const std::string& name,
                         pglease::clock::time_point until) noexcept override {
        return m_inner.wait_for_change(name, until);
    }
    void interrupt() noexcept override { m_inner.interrupt(); }

private:
    pglease::pq_backend m_inner;
    history_file& m_h;
};

/// The elector of the current generation, for report_lost from the writer.
struct shared_state {
    std::mutex mutex;
    pglease::elector* elector = nullptr;
    std::atomic<std::int64_t> epoch{0}; ///< the epoch the writer writes with
    std::string identity;
};

std::string with_app_name(const std::string& conninfo, const std::string& app) {
    return conninfo + " application_name=" + app;
}

void writer_loop(const worker_settings& s, history_file& h, shared_state& st, std::int64_t end) {
    std::mt19937 rng{s.seed ^ 0x9e3779b9U};
    std::unique_ptr<pqxx::connection> conn;
    std::int64_t seq = 0;
    const std::string table = "fw_" + s.lease;
    while (!g_stop.load() && mono_ns() < end) {
        const std::int64_t e = st.epoch.load();
        if (e == 0) {
            sleep_ms(5);
            continue;
        }
        if (!conn) {
            try {
                conn = std::make_unique<pqxx::connection>(
                    with_app_name(s.conninfo, s.label + "-write"));
            } catch (const std::exception&) {
                conn.reset();
                sleep_ms(50);
                continue;
            }
        }
        ++seq;
        const bool slow = rng() % 4 == 0;
        h.append({{"op", "write"},
                  {"ph", "inv"},
                  {"t", mono_ns()},
                  {"w", s.label},
                  {"L", s.lease},
                  {"e", e},
                  {"s", seq}});
        const auto t0 = mono_ns();
        json done{{"op", "write"}, {"t0", t0}, {"w", s.label},
                  {"L", s.lease},  {"e", e},   {"s", seq}};
        bool drop = false;
        try {
            pglease::run_fenced(*conn, pglease::fence_token{s.lease, e, {}}, [&](pqxx::work& tx) {
                tx.exec_params("INSERT INTO " + table +
                                   " (lease, worker, seq, epoch, slow) VALUES ($1, $2, $3, $4, $5)",
                               s.lease, s.label, seq, e, slow);
                if (slow)
                    tx.exec("SELECT pg_sleep(0.02)");
            });
            done["r"] = "ok";
        } catch (const pglease::fence_rejected& ex) {
            done["r"] = "ref";
            done["x"] = ex.sqlstate();
            done["t"] = mono_ns();
            h.append(done);
            std::int64_t expected = e;
            st.epoch.compare_exchange_strong(expected, 0);
            {
                const std::lock_guard lock{st.mutex};
                if (st.elector && st.elector->epoch() == e) {
                    st.elector->report_lost(e);
                    h.append({{"op", "lost"},
                              {"t", mono_ns()},
                              {"w", st.identity},
                              {"L", s.lease},
                              {"e", e}});
                }
            }
            sleep_ms(s.write_interval_ms);
            continue;
        } catch (const pglease::commit_unknown& ex) {
            done["r"] = "unk";
            done["x"] = ex.what();
            drop = true;
        } catch (const pglease::connection_lost& ex) {
            done["r"] = "fail";
            done["x"] = ex.what();
            drop = true;
        } catch (const std::exception& ex) {
            done["r"] = "fail";
            done["x"] = ex.what();
            drop = !conn->is_open();
        }
        done["t"] = mono_ns();
        h.append(done);
        if (drop)
            conn.reset();
        sleep_ms(s.write_interval_ms);
    }
}

} // namespace

worker_settings parse_worker_args(int argc, char** argv) {
    worker_settings s;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        const auto eq = a.find('=');
        if (a.rfind("--", 0) != 0 || eq == std::string::npos)
            throw std::runtime_error("bad worker argument: " + a);
        const std::string k = a.substr(2, eq - 2);
        const std::string v = a.substr(eq + 1);
        if (k == "label")
            s.label = v;
        else if (k == "lease")
            s.lease = v;
        else if (k == "conninfo")
            s.conninfo = v;
        else if (k == "history")
            s.history = v;
        else if (k == "ttl")
            s.ttl_ms = std::stoi(v);
        else if (k == "renew-deadline")
            s.renew_deadline_ms = std::stoi(v);
        else if (k == "retry")
            s.retry_ms = std::stoi(v);
        else if (k == "write-interval")
            s.write_interval_ms = std::stoi(v);
        else if (k == "duration")
            s.duration_ms = std::stoi(v);
        else if (k == "listen")
            s.listen = v == "1";
        else if (k == "storm")
            s.storm = v == "1";
        else if (k == "seed")
            s.seed = static_cast<unsigned>(std::stoul(v));
        else
            throw std::runtime_error("unknown worker argument: " + a);
    }
    return s;
}

int run_worker(const worker_settings& s) {
    struct sigaction sa {};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);

    history_file h{s.history};
    shared_state st;
    const std::int64_t end = mono_ns() + static_cast<std::int64_t>(s.duration_ms) * 1000000;
    std::thread writer{[&] { writer_loop(s, h, st, end); }};
    std::mt19937 rng{s.seed};

    for (int gen = 0; !g_stop.load() && mono_ns() < end; ++gen) {
        pglease::elector_config cfg;
        cfg.lease_name = s.lease;
        cfg.identity = s.label + "." + std::to_string(gen);
        cfg.ttl = std::chrono::milliseconds{s.ttl_ms};
        cfg.renew_deadline = std::chrono::milliseconds{s.renew_deadline_ms};
        cfg.retry_period = std::chrono::milliseconds{s.retry_ms};
        cfg.connection.conninfo = s.conninfo;
        cfg.connection.application_name = s.label + "-renew";
        cfg.connection.call_timeout = std::chrono::milliseconds{s.retry_ms};
        cfg.connection.listen = s.listen;
        const std::string identity = cfg.identity;
        cfg.callbacks.on_started_leading = [&h, &st, &s,
                                            identity](std::int64_t epoch,
                                                      const pglease::stop_token& stop) {
            h.append(
                {{"op", "start"}, {"t", mono_ns()}, {"w", identity}, {"L", s.lease}, {"e", epoch}});
            st.epoch.store(epoch);
            stop.wait();
        };
        cfg.callbacks.on_stopped_leading = [&h, &s, identity] {
            h.append({{"op", "stop"}, {"t", mono_ns()}, {"w", identity}, {"L", s.lease}});
        };
        auto db = std::make_unique<recording_backend>(cfg.connection, h);
        pglease::elector el{cfg, std::move(db)};
        {
            const std::lock_guard lock{st.mutex};
            st.elector = &el;
            st.identity = identity;
        }
        el.start();
        std::int64_t until = end;
        if (s.storm) {
            std::uniform_int_distribution<int> hold{300, 3000};
            until = std::min(end, mono_ns() + static_cast<std::int64_t>(hold(rng)) * 1000000);
        }
        while (!g_stop.load() && mono_ns() < until)
            sleep_ms(10);
        if (s.storm && !g_stop.load())
            h.append({{"op", "resign"}, {"t", mono_ns()}, {"w", identity}, {"L", s.lease}});
        {
            const std::lock_guard lock{st.mutex};
            st.elector = nullptr;
        }
        el.stop();
        if (s.storm && !g_stop.load()) {
            std::uniform_int_distribution<int> pause{0, 500};
            sleep_ms(pause(rng));
        }
    }
    g_stop.store(true);
    writer.join();
    return 0;
}

} // namespace fault
