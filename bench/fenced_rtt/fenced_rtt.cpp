/// @file fenced_rtt.cpp
/// @brief One client, one INSERT per transaction, side by side in the same
/// rounds: a plain pqxx::work (BEGIN, INSERT, COMMIT) into an unfenced
/// table, and pglease::run_fenced into a fenced table of the same shape,
/// in its one-round-trip form (fenced_work: the callable takes
/// pqxx::transaction_base&) and in its pqxx::work& form (lease_use a
/// statement of its own), and the same three round trips written by hand
/// without the library. Prints each figure and its ratio to the plain one:
/// the median over rounds of the per-round ratios.
///
///   fenced_rtt [--rounds N] [--seconds S]     (server from the PG* variables)
#include <pglease/pglease.hpp>
#include <pqxx/pqxx>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <sys/resource.h>
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

/// @p body run for @p seconds (at most 10^6 times).
sample measure(const std::function<void()>& body, double seconds) {
    const auto start = steady::now();
    const double cpu_start = cpu_us();
    const auto end = start + std::chrono::duration<double>(seconds);
    long n = 0;
    while (steady::now() < end && n < 1000000) {
        body();
        ++n;
    }
    const double count = static_cast<double>(n);
    return {count / std::chrono::duration<double>(steady::now() - start).count(),
            (cpu_us() - cpu_start) / count};
}

} // namespace

int main(int argc, char** argv) {
    int rounds = 7;
    double seconds = 1.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--rounds")
            rounds = std::atoi(argv[i + 1]);
        else if (a == "--seconds")
            seconds = std::atof(argv[i + 1]);
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

    pqxx::connection app{""};
    app.prepare("plain", "INSERT INTO " + plain + " (payload, epoch) VALUES ($1, $2)");
    app.prepare("fenced", "INSERT INTO " + fenced + " (payload) VALUES ($1)");
    const std::string payload = "payload of a typical row, some tens of bytes";
    const std::int64_t epoch = lease.epoch();

    const auto plain_work = [&] {
        pqxx::work tx{app};
        tx.exec_prepared0("plain", payload, epoch);
        tx.commit();
    };
    const auto fast = [&] {
        lease.run_fenced(app,
                         [&](pqxx::transaction_base& tx) { tx.exec_prepared0("fenced", payload); });
    };
    const auto old = [&] {
        lease.run_fenced(app, [&](pqxx::work& tx) { tx.exec_prepared0("fenced", payload); });
    };
    // The same three round trips written by hand, without the library: the
    // trigger's and lease_use's cost on the server, and none of the client's.
    const std::string begin_use =
        "BEGIN; SELECT lease_use(" + app.quote(lease_name) + ", " + std::to_string(epoch) + ")";
    const auto by_hand = [&] {
        pqxx::nontransaction tx{app};
        tx.exec(begin_use);
        tx.exec_prepared0("fenced", payload);
        tx.exec("COMMIT");
    };
    struct figure {
        const char* name;
        std::function<void()> body;
        std::vector<double> rates;
        std::vector<double> ratios;
        std::vector<double> cpu;
    };
    std::vector<figure> figures{
        {"plain pqxx::work (BEGIN, INSERT, COMMIT)", plain_work, {}, {}},
        {"run_fenced, fenced_work (3 round trips)", fast, {}, {}},
        {"run_fenced, pqxx::work& (4 round trips)", old, {}, {}},
        {"by hand: BEGIN+lease_use in one query, INSERT, COMMIT", by_hand, {}, {}}};
    for (auto& f : figures)
        (void)measure(f.body, 0.2); // warm up
    for (int r = 0; r < rounds; ++r) {
        std::vector<sample> now(figures.size());
        // Alternate the order from round to round.
        for (std::size_t k = 0; k < figures.size(); ++k) {
            const std::size_t i = r % 2 ? figures.size() - 1 - k : k;
            now[i] = measure(figures[i].body, seconds);
        }
        for (std::size_t i = 0; i < figures.size(); ++i) {
            figures[i].rates.push_back(now[i].rate);
            figures[i].ratios.push_back(now[i].rate / now[0].rate);
            figures[i].cpu.push_back(now[i].cpu_us);
        }
    }
    std::printf("| figure | tx/s (median of %d x %.1f s) | ratio to plain pqxx::work | client "
                "CPU per tx |\n",
                rounds, seconds);
    std::printf("|---|---:|---:|---:|\n");
    for (const auto& f : figures)
        std::printf("| %s | %.0f | %.2fx | %.0f us |\n", f.name, median(f.rates), median(f.ratios),
                    median(f.cpu));
    lease.release();
    pqxx::work tx{admin};
    tx.exec("DROP TABLE " + plain + ", " + fenced);
    tx.commit();
    return 0;
}
