/// @file term_start.cpp
/// @brief What raising downstream floors adds to the start of a term: three
/// electors (0, 1 and 8 downstream databases, each a database of the
/// downstream cluster) run side by side, each on a lease of its own, their
/// connections open after a first term. A round revokes each lease in turn
/// (order alternating) and times the revoke's reply to on_started_leading
/// of the elector's next term: woken by NOTIFY, acquire, then one
/// lease_raise per downstream. Beside it, the unit of the goal "at most one
/// round trip per downstream": one autocommit INSERT on a downstream (a
/// round trip with a durable commit, as a raise is). Every term is checked:
/// the floor in every downstream equals the epoch the callback got.
///
///   pglease_term_start STORE_CONNINFO DOWN_CONNINFO_PREFIX ROUNDS
///   (downstream i is DOWN_CONNINFO_PREFIX + " dbname=ds<i>", i = 1..8)
#include <pglease/pglease.hpp>
#include <pqxx/pqxx>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using micros = std::chrono::duration<double, std::micro>;

std::string downstream(const std::string& prefix, int i) {
    return prefix + " dbname=ds" + std::to_string(i);
}

/// One elector with @p n downstreams, and the time and epoch of its last start.
class timed_elector {
public:
    timed_elector(const std::string& store, const std::string& prefix, int n)
        : m_lease{"term_start_" + std::to_string(n)}
        , m_prefix{prefix}
        , m_n{n} {
        pglease::elector_config cfg;
        cfg.lease_name = m_lease;
        cfg.connection.conninfo = store;
        for (int i = 1; i <= n; ++i) {
            pglease::connection_options d;
            d.conninfo = downstream(prefix, i);
            cfg.downstreams.push_back(d);
        }
        cfg.callbacks.on_started_leading = [this](std::int64_t e, const pglease::stop_token&) {
            const std::lock_guard lock{m_mutex};
            m_started = clock_type::now();
            m_epoch = e;
            m_cv.notify_all();
        };
        cfg.callbacks.on_stopped_leading = [] {};
        cfg.callbacks.on_term_refused = [](std::int64_t, const std::string& why) {
            std::cerr << "term refused: " << why << std::endl;
        };
        m_elector = std::make_unique<pglease::elector>(cfg);
        m_elector->start();
        (void)wait_after(0);
    }

    /// Revokes the lease through @p admin; microseconds from the revoke's
    /// reply to the next term's start.
    double restart(pqxx::connection& admin) {
        std::int64_t before;
        {
            const std::lock_guard lock{m_mutex};
            before = m_epoch;
        }
        pqxx::nontransaction tx{admin};
        tx.exec_params("SELECT lease_revoke($1)", m_lease);
        const auto t0 = clock_type::now();
        const auto started = wait_after(before);
        check();
        return micros(started - t0).count();
    }

private:
    clock_type::time_point wait_after(std::int64_t epoch) {
        std::unique_lock lock{m_mutex};
        if (!m_cv.wait_for(lock, std::chrono::seconds{20}, [&] { return m_epoch > epoch; }))
            throw std::runtime_error{"no new term of " + m_lease + " within 20 s"};
        return m_started;
    }

    void check() {
        std::int64_t epoch;
        {
            const std::lock_guard lock{m_mutex};
            epoch = m_epoch;
        }
        for (int i = 1; i <= m_n; ++i) {
            pqxx::connection c{downstream(m_prefix, i)};
            pqxx::nontransaction tx{c};
            const auto r =
                tx.exec_params("SELECT epoch FROM lease_floors WHERE name = $1", m_lease);
            if (r.empty() || r[0][0].as<std::int64_t>() != epoch)
                throw std::runtime_error{m_lease + ": downstream " + std::to_string(i) +
                                         " not raised to " + std::to_string(epoch)};
        }
    }

    std::string m_lease, m_prefix;
    int m_n;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::int64_t m_epoch = 0;
    clock_type::time_point m_started;
    std::unique_ptr<pglease::elector> m_elector;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::cerr << "usage: pglease_term_start STORE_CONNINFO DOWN_CONNINFO_PREFIX ROUNDS\n";
        return 2;
    }
    const std::string store = argv[1], prefix = argv[2];
    const int rounds = std::stoi(argv[3]);
    const int counts[] = {0, 1, 8};
    std::map<int, std::unique_ptr<timed_elector>> electors;
    for (const int n : counts)
        electors[n] = std::make_unique<timed_elector>(store, prefix, n);
    pqxx::connection admin{store};
    std::map<int, std::vector<double>> starts;
    for (int r = 0; r < rounds; ++r)
        for (int k = 0; k < 3; ++k) {
            const int n = counts[(k + r) % 3]; // alternate the order
            starts[n].push_back(electors[n]->restart(admin));
        }
    std::vector<double> rtt;
    {
        pqxx::connection c{downstream(prefix, 1)};
        pqxx::nontransaction tx{c};
        tx.exec("CREATE TABLE IF NOT EXISTS term_start_rtt (id int)");
        for (int i = 0; i < 100; ++i) {
            const auto t0 = clock_type::now();
            tx.exec("INSERT INTO term_start_rtt VALUES (1)");
            rtt.push_back(micros(clock_type::now() - t0).count());
        }
    }
    const double base = median(starts[0]), commit_rtt = median(rtt);
    std::printf(
        "| downstreams | term start after a revoke, median (us) | added per downstream (us) "
        "| in durable round trips |\n");
    std::printf("|---:|---:|---:|---:|\n");
    for (const int n : counts) {
        const double m = median(starts[n]);
        const double per = n == 0 ? 0 : (m - base) / n;
        std::printf("| %d | %.0f | %.0f | %.2f |\n", n, m, per, n == 0 ? 0.0 : per / commit_rtt);
    }
    std::printf("(%d rounds, connections open; one durable round trip to a downstream, an "
                "autocommit INSERT: median %.0f us; every term checked: each floor = its epoch)\n",
                rounds, commit_rtt);
    return 0;
}
