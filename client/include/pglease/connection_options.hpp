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
/// Every statement is bounded on the client side, with no extra round trip:
/// pq_backend waits for the reply until the call's bound (the earlier of
/// call_timeout, or acquire_timeout for lease_acquire and the calls over
/// many leases (renew_many, acquire_many, release_many), and the deadline the
/// state machine passes: a leader's renew gets the time left before its
/// renew deadline or local deadline), then sends a cancel request (the call
/// fails with SQLSTATE 57014, the session stays open); if the reply still
/// does not come within 200 ms (a stopped backend, a lost network), it
/// shuts the connection down (connection_lost; the next call reconnects).
/// In addition, unless the connection string sets them: `connect_timeout`
/// (call_timeout rounded up to seconds, libpq's minimum is 2 s), TCP
/// keepalives (idle, interval: half of call_timeout, at least 1 s; count 2)
/// and `tcp_user_timeout` (= call_timeout); and every new session runs
/// `SET statement_timeout` (= the larger of call_timeout and
/// acquire_timeout) as a server-side backstop. Connecting is bounded by
/// connect_timeout only, except for a downstream's raise (extension 1.4):
/// its connect and session setup also end by the grant's local deadline.
/// The lease's local deadline never depends on a call returning.
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

    /// Upper bound for one lease_acquire by a follower. Default 5 s. It must
    /// exceed the server's `pg_lease.takeover_timeout` (default 1 s) plus
    /// the time to end the old holder's transactions: an acquire of an
    /// expired lease whose old holder stalled inside a fenced transaction
    /// waits that long on the server before it is granted, and cutting it
    /// shorter would make every takeover fail. 5 s leaves room for a
    /// takeover_timeout raised to a few seconds; a follower holds nothing,
    /// so a long bound only delays noticing a dead server (connect_timeout
    /// and keepalives still apply). The elector does not lower it.
    std::chrono::milliseconds acquire_timeout{5000};

    /// Longest pause between connection attempts to a server that is too
    /// busy to accept them. An attempt that ran into connect_timeout, or
    /// was refused with "too many clients", still cost the server a backend
    /// start; retried at the retry period by every client at once, such
    /// attempts keep the server from ever accepting one (a connection
    /// herd). After one, the next attempt to the same connection string,
    /// from any pq_backend of the process, waits min(this, d x 2^(n-1)) x
    /// [0.5, 1] (random), d = how long the failed attempt took (at least
    /// 500 ms), n = such failures in a row; calls meanwhile fail at once
    /// with connection_lost, sending nothing. Attempts that fail at once
    /// (refused, server starting up) do not back off. Zero: never back
    /// off. Default 15 s.
    std::chrono::milliseconds reconnect_backoff_max{15000};

    /// application_name of the session, visible in pg_stat_activity.
    /// Default "pglease".
    std::string application_name{"pglease"};

    /// LISTEN on channel pg_lease so waiters wake at once on release,
    /// revoke and grants. Default true. With false (or through a pooler that
    /// drops notifications), waiters wake at the expiry the server reported.
    bool listen = true;
};

} // namespace pglease
