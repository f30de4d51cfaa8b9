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

private:
    static json entry(const char* op, const std::string& name, const std::string& holder) {
        return json{{"op", op}, {"w", holder}, {"L", name}};
    }

    /// Runs @p call between send time t0 and reply time t, and records the
    /// outcome: @p outcome fills in the reply's fields, a failure records
    /// r = "fail" and the error, then rethrows.
    template <typename Call, typename Outcome>
    auto recorded(json e, Call&& call, Outcome&& outcome) {
        e["t0"] = mono_ns();
        try {
            auto result = call();
            e["t"] = mono_ns();
            outcome(e, result);
            m_h.append(e);
            return result;
        } catch (const std::exception& ex) {
            e["t"] = mono_ns();
            e["r"] = "fail";
            e["x"] = ex.what();
            m_h.append(e);
            throw;
        }
    }

public:
    pglease::acquire_reply acquire(const std::string& name, const std::string& holder,
                                   std::chrono::milliseconds ttl,
                                   pglease::clock::time_point deadline) override {
        return recorded(
            entry("acq", name, holder),
            [&] { return m_inner.acquire(name, holder, ttl, deadline); },
            [](json& e, const pglease::acquire_reply& reply) {
                e["r"] = reply.acquired ? "ok" : "no";
                e["e"] = reply.epoch;
                e["h"] = reply.holder;
            });
    }

    std::optional<std::chrono::microseconds> renew(const std::string& name,
                                                   const std::string& holder, std::int64_t epoch,
                                                   std::chrono::milliseconds ttl,
                                                   pglease::clock::time_point deadline) override {
        json e = entry("renew", name, holder);
        e["e"] = epoch;
        return recorded(
            std::move(e), [&] { return m_inner.renew(name, holder, epoch, ttl, deadline); },
            [](json& out, const std::optional<std::chrono::microseconds>& left) {
                out["r"] = left ? "ok" : "no";
            });
    }

    bool release(const std::string& name, const std::string& holder, std::int64_t epoch) override {
        json e = entry("rel", name, holder);
        e["e"] = epoch;
        // Recorded before sending: the lease stopped believing already, and a
        // SIGKILL after the server freed it must not leave the belief open.
        json invoked = e;
        invoked["ph"] = "inv";
        invoked["t"] = mono_ns();
        m_h.append(invoked);
        return recorded(
            std::move(e), [&] { return m_inner.release(name, holder, epoch); },
            [](json& out, bool freed) { out["r"] = freed ? "ok" : "no"; });
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
