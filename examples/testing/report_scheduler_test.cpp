/// @file report_scheduler_test.cpp
/// @brief Unit tests of a user's leader-only code with pglease's test
/// double: no database, a manual clock, the real elector.
#include "report_scheduler.hpp"

#include <pglease/testing.hpp>

#include <gtest/gtest.h>

#include <chrono>

namespace {

using namespace std::chrono_literals;

/// The test's job_store: fenced by the double instead of the database.
class recording_job_store final : public example::job_store {
public:
    recording_job_store(pglease::elector& elector, const pglease::testing::lease_store& leases)
        : m_elector{elector}
        , m_leases{leases} {}

    void mark_done(const std::string& job) override {
        pglease::testing::run_fenced(m_elector, m_leases, [&] { done.push_back(job); });
    }

    std::vector<std::string> done;

private:
    pglease::elector& m_elector;
    const pglease::testing::lease_store& m_leases;
};

pglease::elector_config worker_config() {
    pglease::elector_config cfg;
    cfg.lease_name = "reports";
    cfg.identity = "worker-1";
    cfg.callbacks.on_started_leading = [](std::int64_t, const pglease::stop_token&) {};
    cfg.callbacks.on_stopped_leading = [] {};
    return cfg;
}

class report_scheduler_test : public ::testing::Test {
protected:
    /// Starts the elector and waits until its first step is done.
    void start() {
        elector.start();
        ASSERT_TRUE(leases.wait_until_waiting());
    }

    pglease::testing::lease_store leases; // in-memory pg_lease on a manual clock
    pglease::elector elector{worker_config(), leases.connect(), leases.clock()};
    recording_job_store jobs{elector, leases};
    example::report_scheduler scheduler{elector, jobs};
    const std::vector<std::string> due{"daily-sales", "stock"};
};

TEST_F(report_scheduler_test, runs_nothing_while_someone_else_leads) {
    leases.mark_held_elsewhere("reports", "worker-2");
    start();
    EXPECT_EQ(scheduler.tick(due), 0);
    EXPECT_TRUE(jobs.done.empty());
}

TEST_F(report_scheduler_test, runs_the_jobs_once_this_process_holds_the_lease) {
    leases.mark_held_elsewhere("reports", "worker-2");
    start();
    leases.mark_held("reports", "worker-1"); // e.g. worker-2 handed over
    EXPECT_EQ(scheduler.tick(due), 2);
    EXPECT_EQ(jobs.done, due);
}

TEST_F(report_scheduler_test, keeps_running_as_time_passes) {
    start();
    leases.advance(1h); // the elector renews on schedule meanwhile
    EXPECT_EQ(scheduler.tick(due), 2);
}

TEST_F(report_scheduler_test, stops_once_another_process_took_over) {
    start();
    ASSERT_EQ(scheduler.tick(due), 2);
    leases.mark_held_elsewhere("reports", "worker-2");
    EXPECT_EQ(scheduler.tick(due), 0);
    EXPECT_EQ(jobs.done.size(), 2U);
}

TEST_F(report_scheduler_test, a_refused_write_stops_the_tick_and_the_term) {
    start();
    // The server moved on without telling this process (as after a pause):
    // the fence refuses the first write, the rest are not attempted.
    leases.expire("reports");
    EXPECT_EQ(scheduler.tick(due), 0);
    EXPECT_TRUE(jobs.done.empty());
}

} // namespace
