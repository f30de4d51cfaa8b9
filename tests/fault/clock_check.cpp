/// @file clock_check.cpp
/// @brief The server's timers under a stepped libfaketime clock
/// (clock_check.hpp). Bounds: a timeout of T ms fires after at least
/// T - 100 ms and at most T + 1,500 ms (libfaketime without the shim adds
/// the whole step: 4.07 s for 1 s at +3 s).
#include "clock_check.hpp"

#include "cluster.hpp"
#include "common.hpp"
#include "guardian.hpp"

#include <pqxx/pqxx>

#include <cmath>
#include <cstdlib>
#include <iostream>

namespace fault {

namespace {

/// Waits up to 5 s until the server's clock_timestamp() is @p offset s
/// from this host's clock; returns the offset seen.
double wait_offset(const cluster& c, int offset) {
    c.set_clock_offset(offset);
    double seen = NAN;
    const auto end = mono_ns() + 5000000000LL;
    while (mono_ns() < end) {
        try {
            pqxx::connection conn{c.conninfo()};
            pqxx::nontransaction tx{conn};
            const std::int64_t before = wall_ns();
            const double server =
                tx.exec("SELECT extract(epoch FROM clock_timestamp())")[0][0].as<double>();
            seen = server - static_cast<double>(before + wall_ns()) / 2e9;
            if (std::abs(seen - offset) < 0.3)
                break;
        } catch (const std::exception&) {
        }
        sleep_ms(50);
    }
    return seen;
}

/// Runs @p sql, which must fail with @p sqlstate; returns the ms it took.
double timed_failure(pqxx::connection& conn, const std::string& sql, const std::string& sqlstate) {
    const auto t0 = mono_ns();
    try {
        pqxx::nontransaction tx{conn};
        tx.exec(sql);
    } catch (const pqxx::sql_error& e) {
        if (e.sqlstate() == sqlstate)
            return static_cast<double>(mono_ns() - t0) / 1e6;
        throw;
    }
    throw std::runtime_error("no error from: " + sql);
}

bool within(const char* what, int offset, double took_ms, double timeout_ms) {
    const bool ok = took_ms >= timeout_ms - 100 && took_ms <= timeout_ms + 1500;
    std::cout << (ok ? "ok   " : "FAIL ") << what << " " << timeout_ms << " ms at clock "
              << (offset >= 0 ? "+" : "") << offset << " s: fired after " << took_ms << " ms"
              << std::endl;
    return ok;
}

bool check_at(const cluster& c, int offset) {
    const double seen = wait_offset(c, offset);
    if (!(std::abs(seen - offset) < 0.3)) {
        std::cout << "FAIL server clock offset " << seen << " s, expected " << offset << " s"
                  << std::endl;
        return false;
    }
    pqxx::connection holder{c.conninfo()};
    pqxx::work held{holder};
    held.exec("SELECT pg_advisory_xact_lock(4242, 1)");
    pqxx::connection waiter{c.conninfo()};
    const double lock_ms = timed_failure(
        waiter, "SET lock_timeout = 1000; SELECT pg_advisory_xact_lock(4242, 1)", "55P03");
    const double stmt_ms = timed_failure(
        waiter, "SET lock_timeout = 0; SET statement_timeout = 500; SELECT pg_sleep(5)", "57014");
    held.abort();
    const bool lock_ok = within("lock_timeout", offset, lock_ms, 1000);
    return within("statement_timeout", offset, stmt_ms, 500) && lock_ok;
}

} // namespace

int run_clock_check() {
    char tmpl[] = "/tmp/pglease_clock.XXXXXX";
    if (!mkdtemp(tmpl))
        return 1;
    const std::string root = tmpl;
    give_to_postgres(root);
    start_guardian(root, false);
    bool ok = false;
    try {
        cluster c{root, "node0"};
        c.init({});
        c.start(true);
        const bool forward = check_at(c, 3);
        ok = check_at(c, -3) && forward;
        c.stop("immediate");
    } catch (const std::exception& e) {
        std::cerr << "pglease_fault --clock-check: " << e.what() << std::endl;
        ok = false;
    }
    cleanup_root(root, false);
    return ok ? 0 : 1;
}

} // namespace fault
