/// @file run_observability.cpp
/// @brief /healthz and /metrics of `pglease run --http`.
#include "run/run_observability.hpp"
#include "pglease/internal/pqxx_compat.hpp"

#include <pglease/internal/sql_name.hpp>

#include <httplib.h>
#include <pqxx/pqxx>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <mutex>
#include <stdexcept>
#include <thread>

namespace pglease::cli {
namespace {

/// Renew latencies from a millisecond to past any sane call bound.
prometheus::Histogram::BucketBoundaries renew_buckets() {
    return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
}

} // namespace

struct run_observability::state {
    state(const pglease::lease& l, std::string ci, std::string sch)
        : lease{l}
        , conninfo{std::move(ci)}
        , schema{std::move(sch)}
        , registry{std::make_shared<prometheus::Registry>()}
        , leader{gauge("pglease_leader",
                       "1 while this process holds the lease (before its local deadline)")}
        , epoch{gauge("pglease_epoch",
                      "Fencing token of this process's grant; 0 when it holds none")}
        , renewals{counter("pglease_renewals_total", "Successful renewals")}
        , renew_failures{counter("pglease_renew_failures_total",
                                 "Renewals that failed or were refused")}
        , renew_seconds{with_lease(prometheus::BuildHistogram()
                                       .Name("pglease_renew_duration_seconds")
                                       .Help("Time of one renew call, request to reply")
                                       .Register(*registry),
                                   renew_buckets())}
        , server_up{gauge("pglease_server_up",
                          "1 when the last scrape could read the lease from the server")}
        , transitions{gauge("pglease_lease_transitions",
                            "Times the lease's holder changed (leases.transitions)")}
        , rejections{prometheus::BuildCounter()
                         .Name("pglease_fence_rejections_total")
                         .Help("Writes the fence refused for this lease since the server started "
                               "(lease_counters; needs shared_preload_libraries)")
                         .Register(*registry)} {}

    /// The series of @p family for this lease (a histogram's with its buckets).
    template <typename Metric, typename... Args>
    Metric& with_lease(prometheus::Family<Metric>& family, Args&&... args) {
        return family.Add({{"lease", lease.name()}}, std::forward<Args>(args)...);
    }
    prometheus::Gauge& gauge(const char* name, const char* help) {
        return with_lease(prometheus::BuildGauge().Name(name).Help(help).Register(*registry));
    }
    prometheus::Counter& counter(const char* name, const char* help) {
        return with_lease(prometheus::BuildCounter().Name(name).Help(help).Register(*registry));
    }

    /// Reads the server-side figures; false when the server cannot be read.
    bool read_server() {
        try {
            pqxx::connection conn{conninfo};
            pqxx::nontransaction tx{conn};
            pqxx_compat::exec0(tx, "SET statement_timeout = 1000");
            const auto r = pqxx_compat::exec_params(tx,
                                                    "SELECT transitions FROM " +
                                                        pglease::qualified_name(schema, "leases") +
                                                        " WHERE name = $1",
                                                    lease.name());
            transitions.Set(r.empty() ? 0.0 : r[0][0].as<double>());
            read_rejections(tx);
            return true;
        } catch (const std::exception&) {
            return false;
        }
    }

    /// Counters exist only with pg_lease preloaded (and the SQL edition has
    /// none for rejections): without, no series.
    void read_rejections(pqxx::nontransaction& tx) {
        try {
            const auto r = pqxx_compat::exec_params(
                tx,
                "SELECT rejected_stale, rejected_not_held, rejected_no_token FROM " +
                    pglease::qualified_name(schema, "lease_counters") + " WHERE name = $1",
                lease.name());
            const char* codes[] = {"LS001", "LS002", "LS003"};
            for (int i = 0; i < 3; ++i) {
                if (!r.empty() && r[0][i].is_null())
                    continue; // the SQL edition cannot count rejections: no series
                auto& c = rejections.Add({{"lease", lease.name()}, {"sqlstate", codes[i]}});
                const double now = r.empty() ? 0.0 : r[0][i].as<double>();
                if (now > c.Value())
                    c.Increment(now - c.Value());
            }
        } catch (const pqxx::sql_error&) {
            // 55000: counters not enabled on this server
        }
    }

    std::string metrics() {
        const std::lock_guard lock{scrape_mutex};
        const bool held = lease.held();
        leader.Set(held ? 1 : 0);
        epoch.Set(held ? static_cast<double>(lease.epoch()) : 0.0);
        server_up.Set(read_server() ? 1 : 0);
        return prometheus::TextSerializer{}.Serialize(registry->Collect());
    }

    const pglease::lease& lease;
    const std::string conninfo;
    const std::string schema;
    std::mutex scrape_mutex; ///< one scrape at a time (never taken by the renew thread)
    std::shared_ptr<prometheus::Registry> registry;
    prometheus::Gauge& leader;
    prometheus::Gauge& epoch;
    prometheus::Counter& renewals;
    prometheus::Counter& renew_failures;
    prometheus::Histogram& renew_seconds;
    prometheus::Gauge& server_up;
    prometheus::Gauge& transitions;
    prometheus::Family<prometheus::Counter>& rejections;
    httplib::Server server;
    int port = 0;
    std::thread thread;
};

run_observability::run_observability(const http_endpoint& where, const pglease::lease& lease,
                                     std::string conninfo, std::string schema)
    : m_state{std::make_unique<state>(lease, std::move(conninfo), std::move(schema))} {
    state& s = *m_state;
    s.server.Get("/healthz", [&s](const httplib::Request&, httplib::Response& res) {
        if (s.lease.held()) {
            res.status = 200;
            res.set_content("leading epoch " + std::to_string(s.lease.epoch()) + "\n",
                            "text/plain");
        } else {
            res.status = 503;
            res.set_content("not leading\n", "text/plain");
        }
    });
    s.server.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
        res.set_content(s.metrics(), "text/plain; version=0.0.4");
    });
    s.port = where.port == 0 ? s.server.bind_to_any_port(where.host)
                             : (s.server.bind_to_port(where.host, where.port) ? where.port : -1);
    if (s.port <= 0)
        throw std::runtime_error{"cannot listen on " + where.host + ":" +
                                 std::to_string(where.port) + " (--http)"};
    s.thread = std::thread{[&s] { s.server.listen_after_bind(); }};
}

run_observability::~run_observability() {
    m_state->server.stop();
    if (m_state->thread.joinable())
        m_state->thread.join();
}

int run_observability::port() const noexcept {
    return m_state->port;
}

// prometheus-cpp's metrics are thread-safe: the renew thread never waits for
// a scrape (which may wait for the server).
void run_observability::renew_done(std::chrono::steady_clock::duration took, bool ok) {
    m_state->renew_seconds.Observe(std::chrono::duration<double>(took).count());
    if (ok)
        m_state->renewals.Increment();
    else
        m_state->renew_failures.Increment();
}

} // namespace pglease::cli
