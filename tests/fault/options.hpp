/// @file options.hpp
/// @brief Command line of pglease_fault.
///
///   pglease_fault --profile short|soak [--edition c|sql] [--seed N] [--duration S]
///                 [--only KIND,...] [--disable-nemesis KIND,...] [--report FILE] [--keep]
///   pglease_fault --self-test [--dump DIR]
///   pglease_fault --clock-check
///   pglease_fault --replay FILE [--report FILE]
///   pglease_fault worker --key=value ...   (internal: one worker process)
#pragma once

#include <set>
#include <string>

namespace fault {

struct settings {
    std::string profile = "short";
    /// c: CREATE EXTENSION pg_lease; sql: the SQL edition (pg_lease_sql) as a
    /// database owner who is no superuser installs it, on servers with no
    /// pg_lease library, the workers an application role (cluster.hpp).
    std::string edition = "c";
    unsigned seed = 0;
    bool keep = false;
    int duration_s = 600;           ///< soak only: the mixed schedule
    std::set<std::string> only;     ///< phases to run; empty: all
    std::set<std::string> disabled; ///< fault kinds whose nemesis does nothing
    std::string report;             ///< JSON report path
    bool self_test = false;
    std::string dump;         ///< self-test: write the hand-made bundles here
    bool clock_check = false; ///< clock_check.hpp
    std::string replay;       ///< recheck this saved phase
    int ttl_ms = 1000;
    int renew_deadline_ms = 600;
    int retry_ms = 200;
    int takeover_ms = 1000; ///< pg_lease.takeover_timeout (the server's default)
    std::string root;       ///< work directory
    std::string self;       ///< this executable
};

/// Parses argv; throws std::invalid_argument on bad usage.
settings parse_options(int argc, char** argv);

/// Set by SIGINT/SIGTERM: every loop of the suite ends early.
bool interrupted() noexcept;
void install_interrupt_handlers();

} // namespace fault
