/// @file main.cpp
/// @brief pglease_fault: the fault-injection suite (options.hpp for the
/// command line). Owns its clusters, runs worker processes electing leaders
/// through the client library and a nemesis injecting real faults, checks
/// each phase's recorded history, and fails below the phases' floors.
#include "checker.hpp"
#include "clock_check.hpp"
#include "cluster.hpp"
#include "common.hpp"
#include "guardian.hpp"
#include "options.hpp"
#include "profile.hpp"
#include "report.hpp"
#include "self_test.hpp"
#include "worker.hpp"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>

namespace {

int usage(const std::string& why) {
    std::cerr << "pglease_fault: " << why << "\n"
              << "usage: pglease_fault [--profile short|soak] [--edition c|sql] [--seed N]\n"
                 "                     [--duration S] [--only PHASE,...]\n"
                 "                     [--disable-nemesis KIND,...] [--report FILE] [--keep]\n"
                 "       pglease_fault --self-test [--dump DIR]\n"
                 "       pglease_fault --clock-check\n"
                 "       pglease_fault --replay FILE [--report FILE]\n";
    return 2;
}

int replay(const fault::settings& s) {
    using namespace fault;
    phase_bundle b = load_bundle(s.replay);
    settings shown = s;
    shown.seed = b.seed;
    shown.ttl_ms = b.ttl_ms;
    shown.retry_ms = b.retry_ms;
    shown.takeover_ms = b.takeover_ms;
    std::cout << "replaying " << s.replay << ": phase " << b.phase << ", seed " << b.seed << ", "
              << b.history.size() << " records, " << b.faults.size() << " faults" << std::endl;
    std::vector<checked_phase> phases;
    phase_report rep = check_bundle(b);
    phases.emplace_back(std::move(b), std::move(rep));
    const int status = print_report(shown, phases);
    if (!s.report.empty())
        write_json_report(shown, phases, s.report);
    return status;
}

/// The SQL edition's psql script of this source tree, made by its make
/// target (Makefile.sql_edition), copied into @p root; every cluster of the
/// run gets it.
bool write_sql_edition(const std::string& root) {
    using namespace fault;
    const std::string script = root + "/pg_lease_sql.sql";
    const std::string log = root + "/sql_edition.log";
    const int rc = run_command({"sh", "-c",
                                "make -s --no-print-directory -C \"$0\" -f Makefile.sql_edition "
                                "sql/pg_lease_sql.sql && cp \"$0/sql/pg_lease_sql.sql\" \"$1\"",
                                std::string{PGLEASE_FAULT_SOURCE_DIR}, script},
                               false, {}, log, 60);
    if (rc != 0) {
        std::cerr << "pglease_fault: make -f Makefile.sql_edition failed, see " << log << std::endl;
        return false;
    }
    give_to_postgres(script);
    use_sql_edition(script);
    return true;
}

int run_suite(fault::settings s) {
    using namespace fault;
    char self[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    s.self.assign(self, static_cast<std::size_t>(n));
    char tmpl[] = "/tmp/pglease_fault.XXXXXX";
    if (!mkdtemp(tmpl))
        return 1;
    s.root = tmpl;
    give_to_postgres(s.root);
    start_guardian(s.root, s.keep);
    install_interrupt_handlers();

    if (s.edition == "sql" && !write_sql_edition(s.root))
        return 1;
    std::cout << "pglease_fault: profile " << s.profile << ", edition "
              << (s.edition == "sql" ? "pg_lease_sql (SQL, no module, as app_owner/app_user)"
                                     : "pg_lease (C)")
              << ", seed " << s.seed << ", work dir " << s.root << std::endl;
    std::mt19937 rng{s.seed};
    int status = 1;
    try {
        std::vector<checked_phase> phases;
        for (auto& b : run_profile(s, make_plan(s), rng)) {
            phase_report rep = check_bundle(b);
            phases.emplace_back(std::move(b), std::move(rep));
        }
        status = print_report(s, phases);
        if (!s.report.empty())
            write_json_report(s, phases, s.report);
        if (interrupted()) {
            std::cout << "interrupted\n";
            status = 1;
        }
    } catch (const std::exception& e) {
        std::cerr << "pglease_fault: " << e.what() << " (seed " << s.seed << ")" << std::endl;
        status = 1;
    }
    const bool keep = s.keep || status != 0;
    if (keep) {
        std::ofstream{s.root + "/KEEP"} << "histories of a failed run\n";
        std::cout << "histories kept in " << s.root << " (recheck one with --replay " << s.root
                  << "/PHASE.history.json)\n";
    }
    cleanup_root(s.root, keep);
    return status;
}

} // namespace

int main(int argc, char** argv) {
    using namespace fault;
    if (argc > 1 && std::strcmp(argv[1], "worker") == 0) {
        try {
            return run_worker(parse_worker_args(argc - 2, argv + 2));
        } catch (const std::exception& e) {
            std::cerr << "worker: " << e.what() << std::endl;
            return 1;
        }
    }
    settings s;
    try {
        s = parse_options(argc, argv);
    } catch (const std::exception& e) {
        return usage(e.what());
    }
    try {
        if (s.self_test)
            return run_self_test(s.dump);
        if (s.clock_check)
            return run_clock_check();
        if (!s.replay.empty())
            return replay(s);
    } catch (const std::exception& e) {
        std::cerr << "pglease_fault: " << e.what() << std::endl;
        return 1;
    }
    return run_suite(s);
}
