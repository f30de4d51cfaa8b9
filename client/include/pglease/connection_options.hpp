/// @file connection_options.hpp
/// @brief How pq_backend connects, and how it bounds every call in time.
#pragma once

#include <chrono>
#include <string>

namespace pglease {

/// Connection settings for pq_backend.
///
/// The connection string is passed to libpq as is, so everything libpq
/// understands works: key=value strings, postgresql:// URIs, and the PG*
/// environment variables (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD,
/// PGSSLMODE, ...), which fill in whatever the string leaves out. An empty
/// string means "the environment only".
///
/// Bounding calls: a renew must fail, not hang, before the renew deadline.
/// pq_backend therefore adds, unless the connection string sets them:
/// `connect_timeout` (call_timeout rounded up to seconds, libpq's minimum is
/// 2 s), TCP keepalives (idle, interval: half of call_timeout, at least 1 s;
/// count 2) and `tcp_user_timeout` (= call_timeout), and it runs
/// `SET statement_timeout` (= call_timeout) on every new session. A process
/// paused on the server side can still stall a call past these bounds; the
/// lease's local deadline does not depend on the call returning.
///
/// @code
///   pglease::connection_options opts;
///   opts.conninfo = "host=db1 dbname=app";   // or "" for PG* variables
///   opts.schema = "pglease";                 // if not on search_path
/// @endcode
struct connection_options {
    /// libpq connection string or URI; empty: PG* environment variables.
    std::string conninfo;

    /// Schema holding the pg_lease functions; empty (default): unqualified
    /// names, resolved through search_path.
    std::string schema;

    /// Upper bound for one call: statement_timeout, tcp_user_timeout, and
    /// the base of connect_timeout and keepalives. Default 2 s. The elector
    /// lowers it to its retry period if that is shorter.
    std::chrono::milliseconds call_timeout{2000};

    /// application_name of the session, visible in pg_stat_activity.
    /// Default "pglease".
    std::string application_name{"pglease"};

    /// LISTEN on channel pg_lease so waiters wake at once on release,
    /// revoke and grants. Default true. With false (or through a pooler that
    /// drops notifications), waiters wake at the expiry the server reported.
    bool listen = true;
};

} // namespace pglease
