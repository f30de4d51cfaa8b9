/// @file pg_growth.hpp
/// @brief The growth section's parts: the server state it grows
/// (pg_growth_state.cpp), and the latency probes it takes at each size
/// (pg_growth.cpp).
#pragma once

#include "harness.hpp"
#include "pg.hpp"

#include <cstdint>
#include <string>

namespace bench::growth {

/// What the section names and where it puts things, for one run.
struct names {
    std::string ext;    ///< the extension's schema, quoted, with a dot
    std::string schema; ///< bench_growth_<tag>: the reference tables and the fenced ones
    std::string prefix; ///< "g<tag>-": every lease name (and so event name) the section makes
    std::string renew_lease, grant_lease, fence_lease;
    std::string holder = "bench-growth";
};

[[nodiscard]] names make_names(const settings& s, pg_session& db);

/// The extension's tables as the section grows them.  Rows are only ever
/// added (filler rows, INSERT ... SELECT directly into the tables as the
/// superuser), except the extra fence leases, which drop_fence_leases
/// deletes again.
class server_state {
public:
    server_state(pg_session& db, names n, int max_fenced_tables);

    [[nodiscard]] std::int64_t leases(); ///< rows in leases now
    [[nodiscard]] std::int64_t events(); ///< rows in lease_events now

    /// Adds filler leases until leases has target rows (half held by one of
    /// 1000 holders, half free), then VACUUM ANALYZE and CHECKPOINT.
    void fill_leases(std::int64_t target);
    /// Adds events until lease_events has target rows: spread over the
    /// filler leases, one in 1000 for a measured lease, times spread over
    /// the 29 days before now (inside the default 30-day retention, so no
    /// prune deletes them); all_target: the largest target of the run, so
    /// times increase with id across fills.  Then VACUUM ANALYZE, CHECKPOINT.
    void fill_events(std::int64_t target, std::int64_t all_target);
    /// Fences fenced_0 .. fenced_{tables-1}: all by the fence lease
    /// (one_lease), or fenced_i by lease "<prefix>fence-<i>" (fenced_0 always
    /// by the fence lease); unfences the others.
    void fence(int tables, bool one_lease);
    /// Deletes the leases "<prefix>fence-<i>" and their events.
    void drop_fence_leases();

    [[nodiscard]] double fill_seconds() const noexcept { return m_fill_seconds; }

private:
    void settle(const std::string& table);

    pg_session& m_db;
    names m_names;
    int m_max_fenced;
    int m_fenced = 1;
    std::int64_t m_filler_leases = 0;
    std::int64_t m_filler_events = 0;
    double m_fill_seconds = 0;
};

/// Drops what the section made; TRUNCATEs lease_events instead of deleting
/// row by row when (under a lock that keeps writers out) every row left in
/// it is the section's.
void cleanup(const settings& s, pg_session& db, const std::string& ext);

} // namespace bench::growth
