/// @file report_scheduler.hpp
/// @brief A user's leader-only code: runs the due report jobs only while
/// this process leads, each write fenced by the term's epoch.
#pragma once

#include <pglease/elector.hpp>

#include <pqxx/pqxx>

#include <string>
#include <vector>

namespace example {

/// Where the scheduler records its work: the application's own seam, so a
/// unit test can swap the database out. Throws pglease::lease_lost when the
/// write was refused because this process no longer leads.
class job_store {
public:
    job_store() = default;
    job_store(const job_store&) = delete;
    job_store& operator=(const job_store&) = delete;
    virtual ~job_store() = default;

    virtual void mark_done(const std::string& job) = 0;

protected:
    job_store(job_store&&) = default;
    job_store& operator=(job_store&&) = default;
};

/// Production: the jobs table is fenced by the lease (lease_fence), and
/// every write runs in a transaction that carries the elector's epoch.
class pg_job_store final : public job_store {
public:
    pg_job_store(pglease::elector& elector, pqxx::connection& conn)
        : m_elector{elector}
        , m_conn{conn} {}

    void mark_done(const std::string& job) override {
        m_elector.run_fenced(m_conn, [&](pqxx::transaction_base& tx) {
            tx.exec_params0("UPDATE jobs SET state = 'done' WHERE name = $1", job);
        });
    }

private:
    pglease::elector& m_elector;
    pqxx::connection& m_conn;
};

/// Runs the due jobs on each tick of the application's timer, only while
/// this process leads, and stops at the first refused write.
class report_scheduler {
public:
    report_scheduler(const pglease::elector& elector, job_store& jobs)
        : m_elector{elector}
        , m_jobs{jobs} {}

    /// Returns how many jobs ran.
    int tick(const std::vector<std::string>& due) {
        if (!m_elector.leading())
            return 0;
        int ran = 0;
        for (const std::string& job : due) {
            try {
                m_jobs.mark_done(job);
                ++ran;
            } catch (const pglease::lease_lost&) {
                break; // the term is over: not one more write
            }
        }
        return ran;
    }

private:
    const pglease::elector& m_elector;
    job_store& m_jobs;
};

} // namespace example
