/// @file run_observability.hpp
/// @brief `pglease run --http`: a health check and Prometheus metrics.
#pragma once

#include "common/http_endpoint.hpp"

#include <pglease/lease.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace pglease::cli {

/// Serves, on its own thread, for one `pglease run`:
///
///   GET /healthz  200 "leading epoch N" while this process holds the lease
///                 (lease::held(): no I/O, true only before the local
///                 deadline), 503 otherwise; for load balancers and probes.
///   GET /metrics  Prometheus text: pglease_leader, pglease_epoch,
///                 pglease_renewals_total, pglease_renew_failures_total,
///                 pglease_renew_duration_seconds (histogram), and, read
///                 from the server at each scrape, pglease_lease_transitions
///                 and pglease_fence_rejections_total{sqlstate} (the last
///                 needs pg_lease in shared_preload_libraries).
///
/// The HTTP server is cpp-httplib, the exposition prometheus-cpp's.
class run_observability {
public:
    /// Binds @p where (throws std::runtime_error when it cannot) and starts
    /// serving. @p lease must outlive this object; @p conninfo is used for
    /// the server-side figures, one short connection per scrape.
    run_observability(const http_endpoint& where, const pglease::lease& lease, std::string conninfo,
                      std::string schema);
    run_observability(const run_observability&) = delete;
    run_observability& operator=(const run_observability&) = delete;
    run_observability(run_observability&&) = delete;
    run_observability& operator=(run_observability&&) = delete;
    /// Stops the server and joins its thread.
    ~run_observability();

    /// The port it listens on (the chosen one when asked for port 0).
    [[nodiscard]] int port() const noexcept;

    /// From the renew thread: one renew call took @p took; @p ok false when
    /// it failed (an error, or the server refused it).
    void renew_done(std::chrono::steady_clock::duration took, bool ok);

private:
    struct state;
    std::unique_ptr<state> m_state;
};

} // namespace pglease::cli
