/// @file side_by_side.hpp
/// @brief Figures measured side by side in the same rounds: N client threads run one figure's
/// body for a few seconds; within a goal the figures alternate order from round to round, and
/// each figure's ratio is to its goal's baseline (figures[0]) of the same round. Printed as one
/// Markdown table per client count and a summary line per goal.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <vector>

namespace side_by_side {

using steady = std::chrono::steady_clock;

/// The @p q quantile (0..1) of @p v, linear between the nearest ranks.
inline double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

inline double median(const std::vector<double>& v) {
    return quantile(v, 0.5);
}

/// CPU time of this process (all its threads), in microseconds.
inline double cpu_us() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    const auto us = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec);
    };
    return us(u.ru_utime) + us(u.ru_stime);
}

struct sample {
    double rate = 0;   ///< operations per second
    double cpu_us = 0; ///< client CPU per operation, microseconds
};

/// @p run by the first @p n clients, one thread each, for @p seconds; the rates add up. Rethrows
/// the first exception a thread met (a failed check).
template <typename Client>
sample measure_clients(const std::function<void(Client&)>& run,
                       const std::vector<std::unique_ptr<Client>>& clients, std::size_t n,
                       double seconds) {
    const double cpu_start = cpu_us();
    std::vector<long> counts(n, 0);
    std::vector<double> rates(n, 0);
    std::vector<std::exception_ptr> errors(n);
    std::vector<std::thread> threads;
    const auto start = steady::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    for (std::size_t i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
            long count = 0;
            try {
                while (steady::now() < end && count < 1000000) {
                    run(*clients[i]);
                    ++count;
                }
            } catch (...) {
                errors[i] = std::current_exception();
            }
            counts[i] = count;
            rates[i] = static_cast<double>(count) /
                       std::chrono::duration<double>(steady::now() - start).count();
        });
    for (auto& t : threads)
        t.join();
    for (const auto& e : errors)
        if (e)
            std::rethrow_exception(e);
    double rate = 0;
    long total = 0;
    for (std::size_t i = 0; i < n; ++i) {
        rate += rates[i];
        total += counts[i];
    }
    return {rate, (cpu_us() - cpu_start) / static_cast<double>(std::max(total, 1L))};
}

template <typename Client>
struct figure {
    std::string name;
    std::function<void(Client&)> run;
    std::vector<double> rates{};
    std::vector<double> ratios{};
    std::vector<double> cpu{};
};

/// One goal: its baseline (figures[0]), the figure the goal is about (figures[1]) and others
/// that explain it, measured in the same rounds.
template <typename Client>
struct goal {
    std::string key;
    std::string unit; ///< what one operation is
    std::vector<figure<Client>> figures;
};

/// One line of the summary: a goal's ratio at each client count.
struct goal_result {
    std::string key;
    std::string summary; ///< what the goal compares
    double target = 0;   ///< the goal's ratio
    std::vector<double> ratios;
};

/// Every goal's figures measured at @p n clients: a warm-up, then @p rounds rounds; within a
/// goal the figures alternate order from round to round, and each figure's ratio is to the
/// goal's baseline of the same round.
template <typename Client>
void measure_goals(std::vector<goal<Client>>& goals,
                   const std::vector<std::unique_ptr<Client>>& clients, std::size_t n, int rounds,
                   double seconds) {
    for (auto& g : goals)
        for (auto& f : g.figures)
            (void)measure_clients(f.run, clients, n, std::min(0.2, seconds));
    for (int r = 0; r < rounds; ++r)
        for (auto& g : goals) {
            std::vector<sample> now(g.figures.size());
            for (std::size_t k = 0; k < g.figures.size(); ++k) {
                const std::size_t i = r % 2 ? g.figures.size() - 1 - k : k;
                now[i] = measure_clients(g.figures[i].run, clients, n, seconds);
            }
            for (std::size_t i = 0; i < g.figures.size(); ++i) {
                g.figures[i].rates.push_back(now[i].rate);
                g.figures[i].ratios.push_back(now[i].rate / now[0].rate);
                g.figures[i].cpu.push_back(now[i].cpu_us);
            }
        }
}

template <typename Client>
void print_table(const std::vector<goal<Client>>& goals, int n, int rounds, double seconds) {
    std::printf("\n%d client(s), %d rounds x %.1f s per figure\n\n| goal | figure | per "
                "second (median) | ratio to the baseline (median of rounds) | middle half of "
                "the rounds' ratios | client CPU per op |\n|---|---|---:|---:|---:|---:|\n",
                n, rounds, seconds);
    for (const auto& g : goals)
        for (const auto& f : g.figures)
            std::printf("| %s | %s | %.0f %s | %.2fx | %.2f-%.2fx | %.0f us |\n", g.key.c_str(),
                        f.name.c_str(), median(f.rates), g.unit.c_str(), median(f.ratios),
                        quantile(f.ratios, 0.25), quantile(f.ratios, 0.75), median(f.cpu));
    std::fflush(stdout);
}

inline void print_summary(const std::vector<goal_result>& results, const std::vector<int>& counts) {
    std::string list;
    for (const int n : counts)
        list += (list.empty() ? "" : " / ") + std::to_string(n);
    std::printf("\nsummary (installed package; median of per-round ratios at %s clients):\n",
                list.c_str());
    for (const auto& g : results) {
        std::string ratios, verdicts;
        char buf[32];
        for (const double v : g.ratios) {
            std::snprintf(buf, sizeof buf, "%.2fx", v);
            ratios += (ratios.empty() ? "" : " / ") + std::string{buf};
            verdicts +=
                (verdicts.empty() ? "" : " / ") + std::string{v >= g.target ? "met" : "MISSED"};
        }
        std::printf("%s: %s: %s (goal >= %.2fx: %s)\n", g.key.c_str(), g.summary.c_str(),
                    ratios.c_str(), g.target, verdicts.c_str());
    }
    std::fflush(stdout);
}

} // namespace side_by_side
