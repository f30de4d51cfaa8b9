/// @file worker.cpp
/// @brief The worker process: generations of an elector campaigning over a
/// recording backend, a sampler recording what the library tells the
/// process (held() transitions, the callbacks), and the writer
/// (workload.cpp). The orchestrator's signals ask for a hook in the next
/// transaction (worker.hpp).
#include "worker.hpp"

#include "common.hpp"
#include "recording_backend.hpp"
#include "workload.hpp"

#include <pglease/pglease.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <random>
#include <thread>

namespace fault {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_hook{0};
std::atomic<bool> g_handover{false};

void on_term(int /*sig*/) {
    g_stop.store(true);
}

void on_hook(int sig) {
    g_hook.store(sig - SIGRTMIN + 1);
}

void on_handover(int /*sig*/) {
    g_handover.store(true);
}

std::string outcome_name(pglease::handover_result::outcome o) {
    using o_t = pglease::handover_result::outcome;
    switch (o) {
    case o_t::handed_over:
        return "ok";
    case o_t::not_leading:
        return "not_leading";
    case o_t::not_ours:
        return "no";
    case o_t::failed:
        break;
    }
    return "fail";
}

/// The orchestrator's handover: yield_to the identity in <history>.handover,
/// recorded as "yield" (t0 the call, t its return, "to" the successor,
/// "ne" the successor's epoch).
void hand_over(pglease::elector& el, const worker_settings& s, history_file& h,
               const std::string& identity) {
    std::string successor;
    std::ifstream{s.history + ".handover"} >> successor;
    if (successor.empty() || successor == identity)
        return;
    const std::int64_t t0 = mono_ns();
    const std::int64_t epoch = el.epoch();
    std::string result, why;
    std::int64_t next = 0;
    try {
        const auto r = el.yield_to(successor);
        result = outcome_name(r.what);
        next = r.new_epoch;
        why = r.message;
    } catch (const std::exception& e) {
        result = "fail";
        why = e.what();
    }
    h.append({{"op", "yield"},
              {"t0", t0},
              {"t", mono_ns()},
              {"w", identity},
              {"L", s.lease},
              {"e", epoch},
              {"to", successor},
              {"ne", next},
              {"r", result},
              {"x", why}});
}

/// Samples elector::leading() every sample_ms (2 ms) and records transitions (held
/// v=true with the time read after the first true sample; v=false with
/// tl = the time read before the last true sample) and a heartbeat every
/// 50 ms while true (the time read before a true sample), so every
/// recorded interval is one in which the process believed it led. Also
/// forwards hooks to the writer and stops the process when the writer
/// asks (stall_busy).
void sampler(const worker_settings& s, history_file& h, worker_state& st) {
    bool was = false;
    std::int64_t last_true = 0, last_beat = 0, epoch = 0;
    std::string identity;
    while (!st.stop.load()) {
        if (const int hk = g_hook.exchange(0))
            st.pending.store(hk);
        if (const auto at = st.stop_at.load(); at != 0 && mono_ns() >= at) {
            st.stop_at.store(0);
            raise(SIGSTOP);
        }
        const std::int64_t before = mono_ns();
        bool now = false;
        {
            const std::lock_guard lock{st.mutex};
            if (st.elector) {
                now = st.elector->leading();
                if (now) {
                    epoch = st.elector->epoch();
                    identity = st.identity;
                }
            }
        }
        const std::int64_t after = mono_ns();
        if (now && !was) {
            h.append({{"op", "held"},
                      {"v", true},
                      {"t", after},
                      {"wt", wall_ns()},
                      {"w", identity},
                      {"L", s.lease},
                      {"e", epoch}});
            last_beat = after;
        } else if (now && before - last_beat >= 50000000) {
            h.append({{"op", "held"},
                      {"v", true},
                      {"t", before},
                      {"w", identity},
                      {"L", s.lease},
                      {"e", epoch}});
            last_beat = before;
        } else if (!now && was) {
            h.append({{"op", "held"},
                      {"v", false},
                      {"t", after},
                      {"tl", last_true},
                      {"wt", wall_ns()},
                      {"w", identity},
                      {"L", s.lease},
                      {"e", epoch}});
        }
        if (now)
            last_true = before;
        was = now;
        sleep_ms(s.sample_ms);
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
        else if (k == "downstream")
            s.downstream = v;
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
        else if (k == "write-timeout")
            s.write_timeout_ms = std::stoi(v);
        else if (k == "sample")
            s.sample_ms = std::stoi(v);
        else if (k == "duration")
            s.duration_ms = std::stoi(v);
        else if (k == "listen")
            s.listen = v == "1";
        else if (k == "storm")
            s.storm = v == "1";
        else if (k == "workload" && (v == "insert" || v == "mixed"))
            s.workload = v;
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
    struct sigaction hk {};
    hk.sa_handler = on_hook;
    for (int i = 0; i < 3; ++i)
        sigaction(SIGRTMIN + i, &hk, nullptr);
    struct sigaction ho {};
    ho.sa_handler = on_handover;
    sigaction(handover_signal(), &ho, nullptr);
    signal(SIGPIPE, SIG_IGN);

    history_file h{s.history};
    worker_state st;
    const std::int64_t end = mono_ns() + static_cast<std::int64_t>(s.duration_ms) * 1000000;
    std::thread writer{[&] { writer_loop(s, h, st, end); }};
    std::thread watch{[&] { sampler(s, h, st); }};
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
        if (!s.downstream.empty()) {
            // The downstream phase: its floor is raised before each term.
            pglease::connection_options down;
            down.conninfo = s.downstream;
            down.application_name = s.label + "-raise";
            down.call_timeout = std::chrono::milliseconds{s.retry_ms};
            cfg.downstreams.push_back(down);
        }
        const std::string identity = cfg.identity;
        // the orchestrator names a handover's successor by this (worker.hpp)
        std::ofstream{s.history + ".id", std::ios::trunc} << identity << "\n";
        cfg.callbacks.on_started_leading =
            [&h, &st, &s, identity](std::int64_t epoch, const pglease::stop_token& stop) {
                h.append({{"op", "start"},
                          {"t", mono_ns()},
                          {"wt", wall_ns()},
                          {"w", identity},
                          {"L", s.lease},
                          {"e", epoch}});
                st.lead(epoch);
                stop.wait();
                h.append({{"op", "unlead"},
                          {"t", mono_ns()},
                          {"wt", wall_ns()},
                          {"w", identity},
                          {"L", s.lease},
                          {"e", epoch}});
            };
        cfg.callbacks.on_term_refused = [&h, &s, identity](std::int64_t epoch,
                                                           const std::string& why) {
            h.append({{"op", "refused"},
                      {"t", mono_ns()},
                      {"w", identity},
                      {"L", s.lease},
                      {"e", epoch},
                      {"x", why}});
        };
        cfg.callbacks.on_stopped_leading = [&h, &s, identity] {
            h.append({{"op", "stop"},
                      {"t", mono_ns()},
                      {"wt", wall_ns()},
                      {"w", identity},
                      {"L", s.lease}});
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
            // Holds for 0.3-3 x ttl (a fleet with a longer ttl churns less).
            std::uniform_int_distribution<int> hold{3 * s.ttl_ms / 10, 3 * s.ttl_ms};
            until = std::min(end, mono_ns() + static_cast<std::int64_t>(hold(rng)) * 1000000);
        }
        while (!g_stop.load() && mono_ns() < until) {
            if (g_handover.exchange(false))
                hand_over(el, s, h, identity);
            sleep_ms(std::clamp<std::int64_t>((until - mono_ns()) / 1000000, 1, 10));
        }
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
    st.stop.store(true);
    writer.join();
    watch.join();
    return 0;
}

} // namespace fault
