/// @file installed_ratios.cpp
/// @brief N clients (threads, a connection each), one INSERT per
/// transaction, side by side in the same rounds: a plain pqxx::work (BEGIN, INSERT, COMMIT) into an
/// unfenced table, and pglease::run_fenced into a fenced table of the same shape, in its
/// one-round-trip form (fenced_work: the callable takes pqxx::transaction_base&) and in its
/// pqxx::work& form (lease_use a statement of its own), and the same three round trips written by
/// hand without the library (the token declared by lease_use, and by SET LOCAL pg_lease.epoch).
/// Prints each figure and its ratio to the plain one: the median over rounds of the per-round
/// ratios.
///
///   installed_ratios [--rounds N] [--seconds S] [--clients 1,4,16]
///       (server from the PG* variables; one table per client count, in turn)
#include <pglease/pglease.hpp>
#include <pqxx/pqxx>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using steady = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// CPU time of this process (all its threads), in microseconds.
double cpu_us() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    const auto us = [](const timeval& t) {
        return t.tv_sec * 1e6 + static_cast<double>(t.tv_usec);
    };
    return us(u.ru_utime) + us(u.ru_stime);
}

struct sample {
    double rate = 0;   ///< transactions per second
    double cpu_us = 0; ///< client CPU per transaction, microseconds
};

/// @p body run by one thread per connection for @p seconds; the rates add up.
sample measure_clients(const std::function<void(pqxx::connection&)>& body,
                       const std::vector<std::unique_ptr<pqxx::connection>>& conns,
                       double seconds) {
    const double cpu_start = cpu_us();
    std::vector<long> counts(conns.size(), 0);
    std::vector<double> rates(conns.size(), 0);
    std::vector<std::thread> threads;
    const auto start = steady::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    for (std::size_t i = 0; i < conns.size(); ++i)
        threads.emplace_back([&, i] {
            long n = 0;
            while (steady::now() < end && n < 1000000) {
                body(*conns[i]);
                ++n;
            }
            counts[i] = n;
            rates[i] = static_cast<double>(n) /
                       std::chrono::duration<double>(steady::now() - start).count();
        });
    for (auto& t : threads)
        t.join();
    double rate = 0;
    long total = 0;
    for (std::size_t i = 0; i < conns.size(); ++i) {
        rate += rates[i];
        total += counts[i];
    }
    return {rate, (cpu_us() - cpu_start) / static_cast<double>(std::max(total, 1L))};
}

} // namespace

int main(int argc, char** argv) {
    int rounds = 7;
    double seconds = 1.0;
    std::vector<int> clients{1};
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--rounds")
            rounds = std::atoi(argv[i + 1]);
        else if (a == "--seconds")
            seconds = std::atof(argv[i + 1]);
        else if (a == "--clients") {
            clients.clear();
            std::stringstream list{argv[i + 1]};
            for (std::string item; std::getline(list, item, ',');)
                clients.push_back(std::max(1, std::atoi(item.c_str())));
        }
    }
    const std::string suffix = std::to_string(::getpid());
    const std::string lease_name = "fenced_rtt_" + suffix;
    const std::string plain = "fenced_rtt_plain_" + suffix, fenced = "fenced_rtt_fenced_" + suffix;
    pqxx::connection admin{""};
    {
        pqxx::work tx{admin};
        for (const auto& t : {plain, fenced})
            tx.exec("CREATE TABLE " + t +
                    " (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text NOT NULL, "
                    "epoch bigint)");
        tx.exec_params("SELECT lease_fence($1::regclass, $2)", fenced, lease_name);
        tx.commit();
    }
    pglease::pq_backend db{{}};
    pglease::lease_options options;
    options.ttl = std::chrono::hours{1};
    pglease::lease lease{db, lease_name, options};
    if (!lease.acquire()) {
        std::cerr << "cannot acquire " << lease_name << "\n";
        return 1;
    }

    const std::string payload = "payload of a typical row, some tens of bytes";
    const std::int64_t epoch = lease.epoch();
    const std::string begin_use =
        "BEGIN; SELECT lease_use(" + admin.quote(lease_name) + ", " + std::to_string(epoch) + ")";

    const std::string begin_set =
        "BEGIN; SET LOCAL pg_lease.epoch = '" + std::to_string(epoch) + "'";

    using body = std::function<void(pqxx::connection&)>;
    const body plain_work = [&](pqxx::connection& c) {
        pqxx::work tx{c};
        tx.exec_prepared0("plain", payload, epoch);
        tx.commit();
    };
    const body fast = [&](pqxx::connection& c) {
        lease.run_fenced(c,
                         [&](pqxx::transaction_base& tx) { tx.exec_prepared0("fenced", payload); });
    };
    const body old = [&](pqxx::connection& c) {
        lease.run_fenced(c, [&](pqxx::work& tx) { tx.exec_prepared0("fenced", payload); });
    };
    // The same three round trips written by hand, without the library: the
    // trigger's and lease_use's cost on the server, and none of the client's.
    const body by_hand = [&](pqxx::connection& c) {
        pqxx::nontransaction tx{c};
        tx.exec(begin_use);
        tx.exec_prepared0("fenced", payload);
        tx.exec("COMMIT");
    };
    const body by_hand_set = [&](pqxx::connection& c) {
        pqxx::nontransaction tx{c};
        tx.exec(begin_set);
        tx.exec_prepared0("fenced", payload);
        tx.exec("COMMIT");
    };
    struct figure {
        const char* name;
        body run;
        std::vector<double> rates;
        std::vector<double> ratios;
        std::vector<double> cpu;
    };
    for (const int n : clients) {
        // One connection per client thread, each with both statements prepared.
        std::vector<std::unique_ptr<pqxx::connection>> conns;
        for (int i = 0; i < n; ++i) {
            conns.push_back(std::make_unique<pqxx::connection>(""));
            conns.back()->prepare("plain",
                                  "INSERT INTO " + plain + " (payload, epoch) VALUES ($1, $2)");
            conns.back()->prepare("fenced", "INSERT INTO " + fenced + " (payload) VALUES ($1)");
        }
        std::vector<figure> figures{
            {"plain pqxx::work (BEGIN, INSERT, COMMIT)", plain_work, {}, {}, {}},
            {"run_fenced, fenced_work (3 round trips)", fast, {}, {}, {}},
            {"run_fenced, pqxx::work& (4 round trips)", old, {}, {}, {}},
            {"by hand: BEGIN+lease_use in one query, INSERT, COMMIT", by_hand, {}, {}, {}},
            {"by hand: BEGIN+SET LOCAL pg_lease.epoch in one query, INSERT, COMMIT",
             by_hand_set,
             {},
             {},
             {}}};
        for (auto& f : figures)
            (void)measure_clients(f.run, conns, 0.2); // warm up
        for (int r = 0; r < rounds; ++r) {
            std::vector<sample> now(figures.size());
            // Alternate the order from round to round.
            for (std::size_t k = 0; k < figures.size(); ++k) {
                const std::size_t i = r % 2 ? figures.size() - 1 - k : k;
                now[i] = measure_clients(figures[i].run, conns, seconds);
            }
            for (std::size_t i = 0; i < figures.size(); ++i) {
                figures[i].rates.push_back(now[i].rate);
                figures[i].ratios.push_back(now[i].rate / now[0].rate);
                figures[i].cpu.push_back(now[i].cpu_us);
            }
        }
        std::printf("\n%d client(s)\n\n| figure | tx/s (median of %d x %.1f s) | ratio to plain "
                    "pqxx::work | client CPU per tx |\n",
                    n, rounds, seconds);
        std::printf("|---|---:|---:|---:|\n");
        for (const auto& f : figures)
            std::printf("| %s | %.0f | %.2fx | %.0f us |\n", f.name, median(f.rates),
                        median(f.ratios), median(f.cpu));
        std::fflush(stdout);
    }
    lease.release();
    pqxx::work tx{admin};
    tx.exec("DROP TABLE " + plain + ", " + fenced);
    tx.commit();
    return 0;
}
