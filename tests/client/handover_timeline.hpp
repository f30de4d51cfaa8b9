/// @file handover_timeline.hpp
/// @brief What the planned-handover tests (test_pg_handover.cpp,
/// test_pg_handover_request.cpp) record of an elector's terms, and their timings.
#pragma once

#include "pg_fixture.hpp"
#include "pglease/elector.hpp"
#include "pglease/error.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <atomic>
#include <mutex>
#include <thread>

namespace pglease::test {

/// One elector's timeline: when its work ended, when it was told it stopped
/// leading, when it started leading, and its fenced writes.
struct timeline {
    std::mutex mutex;
    std::atomic<int> started{0};
    std::atomic<int> stopped{0};
    std::atomic<std::int64_t> epoch{0};
    std::atomic<int> writes{0};
    std::chrono::steady_clock::time_point started_at{};
    std::chrono::steady_clock::time_point work_ended_at{};
    std::chrono::steady_clock::time_point stopped_at{};
    std::atomic<elector*> self{nullptr};
    std::string table;                      ///< fenced table the work writes to, if any
    std::chrono::milliseconds wind_down{0}; ///< the work's clean-up after its stop token fired

    elector_callbacks callbacks() {
        elector_callbacks c;
        c.on_started_leading = [this](std::int64_t e, const stop_token& stop) {
            {
                const std::lock_guard lock{mutex};
                started_at = std::chrono::steady_clock::now();
                epoch = e;
            }
            ++started;
            if (!table.empty()) {
                // Leader work: fenced writes until told to stop.
                pqxx::connection app{""};
                const std::string insert =
                    "INSERT INTO " + app.quote_name(table) + " (note) VALUES ('work')";
                while (!stop.wait_for(std::chrono::milliseconds{20})) {
                    try {
                        self.load()->run_fenced(
                            app, [&](pqxx::work& tx) { pqxx_compat::exec0(tx, insert); });
                        ++writes;
                    } catch (const lease_lost&) {
                        break;
                    }
                }
            }
            std::this_thread::sleep_for(wind_down); // e.g. flushing, closing files
            const std::lock_guard lock{mutex};
            work_ended_at = std::chrono::steady_clock::now();
        };
        c.on_stopped_leading = [this] {
            {
                const std::lock_guard lock{mutex};
                stopped_at = std::chrono::steady_clock::now();
            }
            ++stopped;
        };
        return c;
    }

    std::chrono::steady_clock::time_point
    at(std::chrono::steady_clock::time_point timeline::*which) {
        const std::lock_guard lock{mutex};
        return this->*which;
    }
};

/// ttl 2 s, renew deadline 1.5 s, retry 1 s (x1.2): a follower's timer is
/// slower than the NOTIFY by far, so a fast start proves the wake-up.
inline elector_config handover_config(const std::string& lease, timeline& t,
                                      const std::string& identity) {
    elector_config c;
    c.lease_name = lease;
    c.identity = identity;
    c.ttl = std::chrono::milliseconds{2000};
    c.renew_deadline = std::chrono::milliseconds{1500};
    c.retry_period = std::chrono::milliseconds{1000};
    c.connection = env_options("pglease-handover-test");
    c.callbacks = t.callbacks();
    return c;
}

} // namespace pglease::test
