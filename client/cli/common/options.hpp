/// @file options.hpp
/// @brief What the command line asked for, as plain data (no I/O).
#pragma once

#include "common/conninfo.hpp"
#include "common/http_endpoint.hpp"
#include "common/run_plan.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pglease::cli {

/// Options of the command itself (before or after the subcommand).
struct global_options {
    connection_args conn; ///< -d, -h, -p, -U
    std::string schema;   ///< --schema: where the extension lives ("" = search_path)
    bool quiet = false;   ///< -q: no informational messages on stderr
};

/// `pglease run`.
struct run_args {
    std::string lease;
    std::string identity; ///< empty: pglease::default_identity()
    bool no_wait = false;
    /// --take-over: ask the current holder (a `pglease run` of the same role)
    /// to stop its job and hand the lease to this instance (rolling deploys).
    bool request_handover = false;
    /// --no-handover: ignore handover requests (and open no session for them).
    bool no_handover = false;
    /// --connect-timeout: how long to keep retrying, with backoff, until a
    /// server first answers (no server, or none accepting writes, as during
    /// a failover); 0 = give up at the first failure. Default 60s.
    std::chrono::milliseconds connect_timeout{60000};
    /// --downstream (repeatable): databases whose tables the lease fences
    /// by its floor (extension 1.4); raised before the job starts, so the job's
    /// unnamed token (PGOPTIONS) is the floor and passes (extension 1.5).
    std::vector<std::string> downstreams;
    /// --lock-delay: recorded with each grant; a grant lost without release
    /// keeps other holders out this long past its expiry. Default 0.
    std::chrono::milliseconds lock_delay{0};
    run_timing timing;
    std::optional<http_endpoint> http; ///< --http: serve /healthz and /metrics
    std::vector<std::string> command;
};

/// `pglease acquire|renew|release|revoke`.
struct primitive_args {
    std::string lease;
    std::string identity;
    std::int64_t epoch = 0;
    std::chrono::milliseconds ttl{15000};               ///< acquire
    std::optional<std::chrono::milliseconds> ttl_given; ///< renew: NULL (keep) unless given
    std::chrono::milliseconds wait{0};                  ///< acquire --wait
    std::chrono::milliseconds lock_delay{0};            ///< acquire --lock-delay
    bool json = false;
};

/// `pglease status|watch`.
struct view_args {
    std::string lease;    ///< empty: all leases
    std::string group;    ///< status --group: the assignment of this lease group
    std::string prefix;   ///< status --prefix: only leases whose names start with it
    bool summary = false; ///< status --summary: counts by state and holder, no list
    bool server = false;  ///< status --server: the edition, its version, the server's
    bool json = false;
    long count = 0; ///< watch: stop after this many events (0: never)
};

/// `pglease fence|unfence`.
struct fence_args {
    std::string table;
    std::string lease;
    std::string column{"epoch"};
};

/// The subcommand chosen and its arguments.
struct parsed_command {
    enum class kind { none, run, status, watch, acquire, renew, release, revoke, fence, unfence };
    kind what = kind::none;
    global_options global;
    run_args run;
    primitive_args primitive;
    view_args view;
    fence_args fence;
};

/// The outcome of parsing: either a command to execute (exit_code < 0), or
/// an exit code with text to print (help on stdout: 0; usage error on
/// stderr: 2).
struct parse_result {
    int exit_code = -1;
    std::string out; ///< for stdout (help)
    std::string err; ///< for stderr (usage errors)
    parsed_command command;
};

/// Parses the arguments of `pglease` (without argv[0]). Never throws (a
/// std::bad_alloc aside); never does I/O. Rules: the first "--" ends the
/// command's own arguments (the rest is `run`'s CMD); durations go through
/// parse_duration(); every mistake is exit code 2 with a message.
[[nodiscard]] parse_result parse_command_line(const std::vector<std::string>& args);

} // namespace pglease::cli
