/// @file cli_parse.cpp
/// @brief The command line of `pglease`, with CLI11.
#include "common/duration.hpp"
#include "common/exit_codes.hpp"
#include "common/options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <sstream>

namespace pglease::cli {
namespace {

using std::chrono::milliseconds;

/// CLI11 check: a duration parse_duration() accepts.
const auto duration_check = [](const std::string& text) -> std::string {
    if (parse_duration(text))
        return {};
    return "invalid duration \"" + text + "\" (use e.g. 500ms, 15s, 2m, 1h30m)";
};

milliseconds duration_or_zero(const std::string& text) {
    return parse_duration(text).value_or(milliseconds{0});
}

constexpr const char* env_help =
    "\nConnection: libpq conventions. -d takes a database name, a key=value\n"
    "connection string or a postgresql:// URI; PGHOST, PGPORT, PGUSER,\n"
    "PGDATABASE, PGPASSWORD, PGSSLMODE, PGSERVICE, ... fill in the rest.\n"
    "Durations: 500ms, 15s, 2m, 1h30m, 1.5s.\n"
    "Exit codes: 0 ok, 1 error, 2 bad usage, 75 lease held elsewhere,\n"
    "76 lease lost (while running, or renew/release of a lease no longer yours).\n";

void add_lease_name(CLI::App* sub, std::string& positional, std::string& option) {
    sub->add_option("name", positional, "Lease name");
    sub->add_option("--lease", option, "Lease name (instead of NAME)");
}

} // namespace

parse_result parse_command_line(const std::vector<std::string>& args) {
    parse_result res;
    parsed_command& pc = res.command;

    // 1. The first "--" ends our arguments: the rest is run's command.
    const auto dash = std::find(args.begin(), args.end(), "--");
    std::vector<std::string> own{args.begin(), dash};
    std::optional<std::vector<std::string>> tail;
    if (dash != args.end())
        tail.emplace(dash + 1, args.end());

    CLI::App app{"pglease: lease-based leader election with fencing tokens, in PostgreSQL",
                 "pglease"};
    app.set_help_flag("--help", "Print this help and exit");
    app.require_subcommand(1, 1);
    app.fallthrough();
    app.footer(env_help);
    auto& g = pc.global;
    app.add_option("-d,--dbname", g.conn.dbname, "Database name, connection string or URI");
    app.add_option("-h,--host", g.conn.host, "Server host or socket directory (PGHOST)");
    app.add_option("-p,--port", g.conn.port, "Server port (PGPORT)");
    app.add_option("-U,--username", g.conn.username, "Database user (PGUSER)");
    app.add_option("--schema", g.schema, "Schema of the pg_lease extension (default: search_path)");
    app.add_flag("-q,--quiet", g.quiet, "No informational messages on stderr");

    // run
    std::string run_ttl = "15s", run_kill_after, run_http, run_connect_timeout = "60s",
                run_lock_delay = "0s";
    std::vector<std::string> run_positional;
    auto* run = app.add_subcommand(
        "run", "Run a command while holding a lease; kill it when the lease is lost");
    run->add_option("--lease", pc.run.lease, "Lease name")->required();
    run->add_option("--ttl", run_ttl, "Lease time to live (default 15s)")->check(duration_check);
    run->add_option("--identity", pc.run.identity, "Holder identity (default: host:pid:random)");
    run->add_option("--lock-delay", run_lock_delay,
                    "After a grant is lost without release (expired, revoked), no other "
                    "holder gets the lease until this has passed (default 0s)")
        ->check(duration_check);
    run->add_flag("--no-wait", pc.run.no_wait, "Exit 75 at once when the lease is held elsewhere");
    run->add_flag("--take-over", pc.run.request_handover,
                  "Rolling deploy: ask the holder (a pglease run of the same role) to stop its "
                  "job and hand the lease over to this one, then run CMD");
    run->add_flag("--no-handover", pc.run.no_handover,
                  "Ignore --take-over requests from other instances (no extra session)");
    run->add_option("--kill-after", run_kill_after,
                    "Grace between SIGTERM and SIGKILL when the lease is lost (default min(ttl/5, "
                    "10s), at most ttl/3)")
        ->check(duration_check);
    run->add_option("--http", run_http,
                    "Serve /healthz (200 while holding the lease, else 503) and Prometheus "
                    "/metrics on [HOST:]PORT (host default 127.0.0.1; port 0: any free one)");
    run->add_option("--connect-timeout", run_connect_timeout,
                    "Until a server first answers, retry with backoff for up to this long "
                    "(default 60s; 0s: exit 1 at the first failure)")
        ->check(duration_check);
    run->add_option("--downstream", pc.run.downstreams,
                    "A database (connection string) whose tables this lease fences by its "
                    "floor; raised before CMD starts (repeatable)");
    run->add_option("command", run_positional, "CMD ARGS... (after --)");
    run->footer(
        "\nCMD runs in its own process group with PGLEASE_NAME, PGLEASE_EPOCH,\n"
        "PGLEASE_HOLDER set and `-c pg_lease.epoch=<epoch>` appended to PGOPTIONS,\n"
        "so its own libpq writes to fenced tables carry the fencing token.\n"
        "The lease is renewed every ttl/3. When it is lost, or could expire before\n"
        "a renewal succeeds, the group gets SIGTERM, then SIGKILL after\n"
        "--kill-after, before the lease can expire on the server, and pglease\n"
        "exits 76. SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 are passed to\n"
        "the group. Otherwise pglease releases the lease and exits with CMD's\n"
        "status (128+N when signal N killed it). A holder asked by a verified\n"
        "`run --take-over` (same role or a superuser) stops CMD the same way,\n"
        "hands the lease to the requester and exits 0. With --downstream, the\n"
        "lease's floor is raised in each of those databases before CMD starts;\n"
        "if one cannot be raised before the lease's local deadline, the lease is\n"
        "released and pglease waits a retry period and tries again (with\n"
        "--no-wait: exits 1).\n\n"
        "Example (cron): pglease run --lease nightly-report --no-wait -- /usr/local/bin/report\n");

    // status, watch
    std::string status_name, status_opt, watch_name, watch_opt;
    auto* status =
        app.add_subcommand("status", "Show leases: holder, epoch, valid or not, time remaining");
    add_lease_name(status, status_name, status_opt);
    status->add_flag("--json", pc.view.json, "JSON: an array, or one object when NAME is given");
    status->add_option("--group", pc.view.group,
                       "Show the members and shard assignment of this lease group instead");
    status->add_option("--prefix", pc.view.prefix,
                       "Only the leases whose names start with this (not with NAME)");
    status->add_flag("--summary", pc.view.summary,
                     "Counts by state and by holder instead of one line per lease "
                     "(fast over 100,000 leases)");
    status->add_flag("--server", pc.view.server,
                     "Which edition of pg_lease the database has (pg_lease: C, or "
                     "pg_lease_sql), its version and schema, and the PostgreSQL version");
    auto* watch = app.add_subcommand(
        "watch", "Print one line per lease event as it happens (LISTEN pg_lease)");
    add_lease_name(watch, watch_name, watch_opt);
    bool watch_json = false;
    watch->add_flag("--json", watch_json, "One JSON object per line");
    watch->add_option("-n,--count", pc.view.count, "Exit after N events")
        ->check(CLI::NonNegativeNumber);

    // acquire, renew, release, revoke
    std::string p_name, p_opt, acquire_ttl = "15s", acquire_wait = "0s", renew_ttl,
                               acquire_lock_delay = "0s";
    auto* acquire = app.add_subcommand(
        "acquire", "Acquire once (or wait with --wait); print the epoch; 75 when held elsewhere");
    auto* renew = app.add_subcommand("renew", "Renew a grant; 76 when it is not yours any more");
    auto* release =
        app.add_subcommand("release", "Release a grant at once; 76 when it was not yours any more");
    auto* revoke = app.add_subcommand(
        "revoke", "Free a lease whoever holds it (needs EXECUTE on lease_revoke)");
    for (auto* sub : {acquire, renew, release, revoke})
        add_lease_name(sub, p_name, p_opt);
    for (auto* sub : {acquire, renew, release})
        sub->add_option("--identity", pc.primitive.identity, "Holder identity")->required();
    for (auto* sub : {renew, release})
        sub->add_option("--epoch", pc.primitive.epoch, "Epoch of the grant (what acquire printed)")
            ->required();
    acquire->add_option("--ttl", acquire_ttl, "Time to live (default 15s)")->check(duration_check);
    acquire
        ->add_option("--lock-delay", acquire_lock_delay,
                     "Recorded with the grant: if it is lost without release, no other holder "
                     "gets the lease until this has passed (default 0s)")
        ->check(duration_check);
    acquire
        ->add_option("--wait", acquire_wait,
                     "Wait up to this long for the lease (default 0: one try)")
        ->check(duration_check);
    acquire->add_flag("--json", pc.primitive.json,
                      "Print {acquired, name, holder, epoch, remaining_ms}");
    renew->add_option("--ttl", renew_ttl, "New time to live (default: the lease's own)")
        ->check(duration_check);

    // fence, unfence
    auto* fence = app.add_subcommand("fence", "Put TABLE under a lease's fence (lease_fence)");
    fence->add_option("table", pc.fence.table, "Table (may be schema-qualified)")->required();
    fence->add_option("--lease", pc.fence.lease, "Lease name")->required();
    fence->add_option("--column", pc.fence.column,
                      "bigint column that holds the epoch (default epoch)");
    std::string unfence_table;
    auto* unfence = app.add_subcommand("unfence", "Remove the fence from TABLE (lease_unfence)");
    unfence->add_option("table", unfence_table, "Table")->required();

    for (auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        sub->set_help_flag("--help", "Print this help and exit");
        if (sub->get_footer().empty())
            sub->footer(env_help);
    }

    // 2. Parse (CLI11 wants argv order reversed).
    std::vector<std::string> rev{own.rbegin(), own.rend()};
    try {
        app.parse(rev);
    } catch (const CLI::CallForHelp&) {
        // Help of the subcommand that asked for it, or of the command.
        const CLI::App* which = &app;
        for (const auto* sub : app.get_subcommands())
            which = sub;
        res.out = which->help();
        res.exit_code = exit_ok;
        return res;
    } catch (const CLI::ParseError& e) {
        res.err = std::string{"pglease: "} + e.what() + "\nRun with --help for more information.\n";
        res.exit_code = exit_usage;
        return res;
    }

    const auto usage = [&](const std::string& message) {
        res.err = "pglease: " + message + "\nRun with --help for more information.\n";
        res.exit_code = exit_usage;
        return res;
    };
    const auto pick_name = [&](const std::string& positional, const std::string& option,
                               bool required) -> std::optional<std::string> {
        if (!positional.empty() && !option.empty() && positional != option)
            return std::nullopt;
        std::string n = positional.empty() ? option : positional;
        if (required && n.empty())
            return std::nullopt;
        return n;
    };

    if (tail && !run->parsed())
        return usage("only `run` takes a command after --");

    if (run->parsed()) {
        pc.what = parsed_command::kind::run;
        if (tail && !run_positional.empty())
            return usage("run: give the command after -- only");
        pc.run.command = tail ? *tail : run_positional;
        if (pc.run.request_handover && pc.run.no_wait)
            return usage("run: --take-over waits for the holder to hand over; it cannot be "
                         "combined with --no-wait");
        if (pc.run.command.empty())
            return usage(
                "run: a command is required after --, e.g. pglease run --lease jobs -- ./job.sh");
        std::optional<milliseconds> kill_after;
        if (!run_kill_after.empty())
            kill_after = duration_or_zero(run_kill_after);
        pc.run.connect_timeout = duration_or_zero(run_connect_timeout);
        pc.run.lock_delay = duration_or_zero(run_lock_delay);
        std::string why;
        const auto timing = plan_run(duration_or_zero(run_ttl), kill_after, why);
        if (!timing)
            return usage("run: " + why);
        pc.run.timing = *timing;
        if (!run_http.empty()) {
            pc.run.http = parse_http_endpoint(run_http, why);
            if (!pc.run.http)
                return usage("run: " + why);
        }
    } else if (status->parsed() || watch->parsed()) {
        const bool is_status = status->parsed();
        pc.what = is_status ? parsed_command::kind::status : parsed_command::kind::watch;
        const auto n = is_status ? pick_name(status_name, status_opt, false)
                                 : pick_name(watch_name, watch_opt, false);
        if (!n)
            return usage("give the lease name once, as NAME or --lease");
        pc.view.lease = *n;
        if (!is_status)
            pc.view.json = watch_json;
        if (is_status && !pc.view.group.empty() && !pc.view.lease.empty())
            return usage("status: give either a lease NAME or --group, not both");
        if (is_status && !pc.view.group.empty() && (pc.view.summary || !pc.view.prefix.empty()))
            return usage("status: --group shows one group; --prefix and --summary do not apply");
        if (is_status && !pc.view.lease.empty() && (pc.view.summary || !pc.view.prefix.empty()))
            return usage("status: give a lease NAME or --prefix/--summary, not both");
        if (is_status && pc.view.server &&
            (!pc.view.lease.empty() || !pc.view.group.empty() || pc.view.summary ||
             !pc.view.prefix.empty()))
            return usage("status: --server shows the installation; NAME, --group, --prefix and "
                         "--summary do not apply");
    } else if (fence->parsed()) {
        pc.what = parsed_command::kind::fence;
    } else if (unfence->parsed()) {
        pc.what = parsed_command::kind::unfence;
        pc.fence.table = unfence_table;
    } else {
        const auto n = pick_name(p_name, p_opt, true);
        if (!n)
            return usage("a lease name is required, once, as NAME or --lease");
        pc.primitive.lease = *n;
        if (acquire->parsed()) {
            pc.what = parsed_command::kind::acquire;
            pc.primitive.ttl = duration_or_zero(acquire_ttl);
            pc.primitive.wait = duration_or_zero(acquire_wait);
            pc.primitive.lock_delay = duration_or_zero(acquire_lock_delay);
            if (pc.primitive.ttl.count() <= 0)
                return usage("acquire: --ttl must be positive");
        } else if (renew->parsed()) {
            pc.what = parsed_command::kind::renew;
            if (!renew_ttl.empty()) {
                pc.primitive.ttl_given = duration_or_zero(renew_ttl);
                if (pc.primitive.ttl_given->count() <= 0)
                    return usage("renew: --ttl must be positive");
            }
        } else if (release->parsed()) {
            pc.what = parsed_command::kind::release;
        } else {
            pc.what = parsed_command::kind::revoke;
        }
        if (pc.what != parsed_command::kind::revoke && pc.what != parsed_command::kind::acquire &&
            pc.primitive.epoch <= 0)
            return usage("--epoch must be a positive integer");
    }
    return res;
}

} // namespace pglease::cli
