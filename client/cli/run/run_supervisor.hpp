/// @file run_supervisor.hpp
/// @brief `pglease run`'s supervisor: acquires the lease, starts the job,
/// renews on a thread of its own and kills the job's process group before
/// the lease can expire (the steps are described in cmd_run.cpp).
#pragma once

#include "commands.hpp"
#include "common/options.hpp"
#include "pglease/internal/handover_request.hpp"
#include "run/run_observability.hpp"

#include <pglease/lease.hpp>
#include <pglease/pq_backend.hpp>

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace pglease::cli {

using steady = std::chrono::steady_clock;

/// One `pglease run`: owns the connection, the lease, the renew thread and
/// the job's process group.
class supervisor {
public:
    supervisor(const global_options& g, const run_args& a)
        : m_g{g}
        , m_a{a}
        , m_db{make_connection_options(g, a.timing.call_timeout)}
        , m_lease{m_db, a.lease, lease_options_for(a)}
        , m_ask{a.timing.retry, a.timing.ttl} {}
    supervisor(const supervisor&) = delete;
    supervisor& operator=(const supervisor&) = delete;
    supervisor(supervisor&&) = delete;
    supervisor& operator=(supervisor&&) = delete;
    ~supervisor() {
        if (m_child > 0 && !m_child_exited)
            signal_group(SIGKILL); // only on an unexpected exception
        stop_renewer();
    }

    /// Steps 1-6 (cmd_run.cpp); returns the exit code.
    int run();

private:
    static pglease::lease_options lease_options_for(const run_args& a);

    int acquire_phase();
    /// Raises the floor in every --downstream database (run_downstream.cpp);
    /// what failed, or empty.
    [[nodiscard]] std::string raise_downstreams();
    int start_job();
    int supervise();
    void renew_loop() noexcept;
    void stop_renewer() noexcept;
    [[nodiscard]] steady::time_point step_down_at() const noexcept;
    void signal_group(int sig);
    [[nodiscard]] bool group_alive() const noexcept;
    void reap() noexcept;
    void release_lease(bool quiet_if_lost);
    void held_elsewhere_message(const char* verb);
    void ask_for_handover();
    void listen_for_handover_requests();
    bool take_handover_request();
    int finish_handover();

    const global_options& m_g;
    const run_args& m_a;
    pglease::pq_backend m_db;
    pglease::lease m_lease;
    std::vector<std::unique_ptr<pglease::pq_backend>> m_downstreams; ///< made on first use

    pid_t m_child = -1;
    int m_child_status = 0;
    bool m_child_exited = false;

    std::thread m_renewer;
    std::atomic<bool> m_stopping{false};
    std::mutex m_mutex;
    std::string m_last_renew_error; ///< guarded by m_mutex
    std::atomic<bool> m_refused{false};
    std::unique_ptr<run_observability> m_http; ///< --http: /healthz and /metrics

    // Handover requests (protocol: pglease/internal/handover_request.hpp).
    std::unique_ptr<handover_requester> m_requester; ///< --take-over, while waiting
    handover_schedule m_ask;                         ///< whom to ask, when
    std::unique_ptr<handover_listener> m_listener;   ///< requests to us, while holding
    std::optional<accepted_handover> m_handover;     ///< the request we act on
};

} // namespace pglease::cli
