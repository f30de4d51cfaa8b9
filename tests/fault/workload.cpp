/// @file workload.cpp
/// @brief The fenced transactions of a worker and the hooks that stall or
/// stretch them on the orchestrator's signal.
#include "workload.hpp"

#include <pqxx/pqxx>

#include <signal.h>

#include <chrono>
#include <memory>
#include <random>
#include <tuple>
#include <utility>

namespace fault {
namespace {

using nlohmann::json;

std::string with_app_name(const std::string& conninfo, const std::string& app) {
    // Bounded: a server too busy to accept is retried (writer_loop), never waited for forever.
    return conninfo + " connect_timeout=10 application_name=" + app;
}

/// One transaction's plan, drawn at random; `ops` names what it runs.
struct txn_plan {
    bool savepoint = false, update = false, copy = false, del = false, truncate = false;
    bool slow = false;
    hook hk = hook::none;

    [[nodiscard]] std::string ops() const {
        std::string o = "i";
        if (savepoint)
            o += 's';
        if (update)
            o += 'u';
        if (copy)
            o += 'c';
        if (del)
            o += 'd';
        if (truncate)
            o += 't';
        if (hk == hook::long_txn)
            o += 'L';
        return o;
    }
};

txn_plan draw(std::mt19937& rng, hook hk, bool mixed) {
    std::uniform_int_distribution<int> pct{0, 99};
    txn_plan p;
    p.hk = hk;
    if (!mixed) {
        p.slow = pct(rng) < 25;
        return p;
    }
    p.savepoint = pct(rng) < 25;
    p.update = pct(rng) < 30;
    p.copy = pct(rng) < 20;
    p.del = pct(rng) < 10;
    p.truncate = pct(rng) < 2;
    p.slow = pct(rng) < 25;
    return p;
}

/// The statements of one fenced transaction (inside run_fenced).
void run_statements(pqxx::work& tx, const worker_settings& s, const txn_plan& p, std::int64_t seq,
                    std::int64_t e, history_file& h, worker_state& st) {
    const std::string fw = "fw_" + s.lease, fs = "fs_" + s.lease, fc = "fc_" + s.lease;
    if (p.savepoint) {
        // The transaction's first fenced write, undone: the next one must
        // pass the fence (and take its lock) again.
        tx.exec("SAVEPOINT fault_sp");
        tx.exec_params("INSERT INTO " + fs +
                           " (lease, worker, seq, epoch, rb) "
                           "VALUES ($1, $2, $3, $4, true)",
                       s.lease, s.label, seq, e);
        tx.exec("ROLLBACK TO SAVEPOINT fault_sp");
    }
    if (s.workload == "mixed")
        tx.exec_params("INSERT INTO " + fw +
                           " (lease, worker, seq, epoch, ops, slow) "
                           "VALUES ($1, $2, $3, $4, $5, $6)",
                       s.lease, s.label, seq, e, p.ops(), p.slow);
    else
        tx.exec_params("INSERT INTO " + fw +
                           " (lease, worker, seq, epoch, slow) "
                           "VALUES ($1, $2, $3, $4, $5)",
                       s.lease, s.label, seq, e, p.slow);
    if (p.update) {
        const auto r = tx.exec_params(
            "UPDATE " + fc + " SET n = n + 1, epoch = $2 WHERE worker = $1", s.label, e);
        if (r.affected_rows() == 0)
            tx.exec_params("INSERT INTO " + fc +
                               " (lease, worker, n, epoch) VALUES ($1, $2, 1, $3)",
                           s.lease, s.label, e);
    }
    if (p.del)
        tx.exec_params("DELETE FROM " + fs + " WHERE worker = $1 AND seq <= $2", s.label,
                       seq - 20); // the rows of recent transactions stay, for I3
    if (p.truncate)
        tx.exec("TRUNCATE " + fs);
    if (p.copy) {
        pqxx::stream_to copy{tx, fs, std::vector<std::string>{"lease", "worker", "seq", "epoch"}};
        for (int i = 0; i < 3; ++i)
            copy << std::make_tuple(s.lease, s.label, seq, e);
        copy.complete();
    }
    if (p.slow)
        tx.exec("SELECT pg_sleep(0.02)");
    switch (p.hk) {
    case hook::stall_idle:
        // Paused inside the open transaction, after its fenced writes,
        // before COMMIT: the backend is idle in transaction.
        h.append({{"op", "hook"},
                  {"what", "stall-idle"},
                  {"t", mono_ns()},
                  {"w", s.label},
                  {"L", s.lease},
                  {"e", e},
                  {"s", seq}});
        raise(SIGSTOP);
        break;
    case hook::stall_busy:
        // The sampler stops the process while this statement runs: the
        // backend is busy in a statement of the open transaction.
        h.append({{"op", "hook"},
                  {"what", "stall-busy"},
                  {"t", mono_ns()},
                  {"w", s.label},
                  {"L", s.lease},
                  {"e", e},
                  {"s", seq}});
        st.stop_at.store(mono_ns() + 150000000);
        tx.exec("SELECT pg_sleep(" + std::to_string(10.0 * s.ttl_ms / 1000.0) + ")");
        break;
    case hook::long_txn:
        tx.exec("SELECT pg_sleep(" + std::to_string(2.5 * s.ttl_ms / 1000.0) + ")");
        break;
    case hook::none:
        break;
    }
}

/// run_fenced(), bounded by the worker's write timeout when it has one
/// (the network phases: every call of a cut-off holder must end).
template <typename F>
void fenced(pqxx::connection& conn, const pglease::fence_token& token, const worker_settings& s,
            F&& fn) {
    if (s.write_timeout_ms > 0)
        pglease::run_fenced(conn, token, std::forward<F>(fn),
                            std::chrono::milliseconds{s.write_timeout_ms});
    else
        pglease::run_fenced(conn, token, std::forward<F>(fn));
}

/// The downstream phase: the transaction's row in the downstream database
/// (dw_<lease>, fenced by the lease's floor there) is written first and
/// committed last, around the whole store transaction, so a worker stopped
/// anywhere in the store transaction (a pause, a stall hook) holds a
/// downstream write in flight.
template <typename StoreWork>
void downstream_write(pqxx::connection& down, const pglease::fence_token& token,
                      const worker_settings& s, std::int64_t seq, StoreWork&& store_work) {
    fenced(down, token, s, [&](pqxx::work& tx) {
        tx.exec_params("INSERT INTO dw_" + s.lease +
                           " (lease, worker, seq, epoch) VALUES ($1, $2, $3, $4)",
                       s.lease, s.label, seq, token.epoch);
        store_work();
    });
}

} // namespace

void writer_loop(const worker_settings& s, history_file& h, worker_state& st, std::int64_t end) {
    std::mt19937 rng{s.seed ^ 0x9e3779b9U};
    std::unique_ptr<pqxx::connection> conn, down;
    std::int64_t seq = 0;
    while (!st.stop.load() && mono_ns() < end) {
        const std::int64_t e = st.epoch.load();
        if (e == 0) {
            st.await_lead(std::chrono::milliseconds{100});
            continue;
        }
        if (!conn || (!s.downstream.empty() && !down)) {
            try {
                conn = std::make_unique<pqxx::connection>(
                    with_app_name(s.conninfo, s.label + "-write"));
                if (!s.downstream.empty())
                    down = std::make_unique<pqxx::connection>(
                        with_app_name(s.downstream, s.label + "-down"));
            } catch (const std::exception&) {
                conn.reset();
                down.reset();
                sleep_ms(50);
                continue;
            }
        }
        ++seq;
        const auto hk = static_cast<hook>(st.pending.exchange(0));
        const txn_plan plan = draw(rng, hk, s.workload == "mixed");
        std::string identity;
        {
            const std::lock_guard lock{st.mutex};
            identity = st.identity;
        }
        h.append({{"op", "write"},
                  {"ph", "inv"},
                  {"t", mono_ns()},
                  {"w", s.label},
                  {"L", s.lease},
                  {"e", e},
                  {"s", seq},
                  {"k", plan.ops()}});
        const auto t0 = mono_ns();
        json done{{"op", "write"}, {"t0", t0}, {"w", s.label},   {"L", s.lease},
                  {"e", e},        {"s", seq}, {"k", plan.ops()}};
        if (s.write_timeout_ms > 0)
            done["b"] = s.write_timeout_ms; // its bound, checked (B1)
        bool drop = false, refused = false;
        bool store_refused = false, store_committed = false;
        try {
            const pglease::fence_token token{s.lease, e, {}};
            auto store_work = [&] {
                try {
                    fenced(*conn, token, s,
                           [&](pqxx::work& tx) { run_statements(tx, s, plan, seq, e, h, st); });
                    store_committed = true;
                } catch (const pglease::fence_rejected&) {
                    store_refused = true;
                    throw;
                }
            };
            if (down)
                downstream_write(*down, token, s, seq, store_work);
            else
                store_work();
            done["r"] = "ok";
        } catch (const pglease::fence_rejected& ex) {
            done["r"] = "ref";
            done["x"] = ex.sqlstate();
            if (down && !store_refused)
                done["d"] = true; // refused by the downstream's floor
            refused = true;
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
        if (store_committed && done["r"] != "ok") {
            // The store's transaction committed; only the downstream one,
            // committed last, failed (two databases: no atomic commit).
            done["dr"] = done["r"];
            done["dx"] = done.value("x", "");
            done["r"] = "ok";
            done.erase("x");
            refused = false;
            drop = true;
        }
        done["t"] = mono_ns();
        h.append(done);
        if (plan.hk == hook::long_txn)
            h.append({{"op", "long"},
                      {"w", identity},
                      {"wl", s.label},
                      {"L", s.lease},
                      {"e", e},
                      {"s", seq},
                      {"t0", t0},
                      {"t", done["t"]},
                      {"r", done["r"]},
                      {"x", done.value("x", "")}});
        if (refused) {
            std::int64_t expected = e;
            st.epoch.compare_exchange_strong(expected, 0);
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
        if (drop) {
            conn.reset();
            down.reset();
        }
        sleep_ms(s.write_interval_ms);
    }
}

} // namespace fault
