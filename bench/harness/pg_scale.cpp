/// @file pg_scale.cpp
/// @brief PostgreSQL figures: how renewal throughput holds up with many
/// leases; and dropping what the PostgreSQL sections made.
#include "figures.hpp"
#include "pg.hpp"
#include "pg_growth.hpp"
#include "pg_names.hpp"

#include <algorithm>
#include <stdexcept>

namespace bench {

void run_scale(const settings& s, report& out) {
    pg_session admin{s.pg_conninfo};
    const std::string ext = extension_prefix(admin);
    constexpr double ttl_s = 15, renew_every_s = ttl_s / 3; // client-go's and pglease's defaults
    for (const int leases : s.scale_leases) {
        const int sessions = std::min(s.scale_sessions, leases);
        const std::string prefix = "s" + s.tag + "-" + std::to_string(leases) + "-";
        log("scale: granting " + std::to_string(leases) + " leases to " + std::to_string(sessions) +
            " holders");
        pg_result g = admin.query(
            "SELECT g.i % $2::int, g.n, (" + ext +
                "lease_acquire(g.n, 'h' || (g.i % $2::int), '1 hour')).epoch"
                " FROM (SELECT i, $1 || i AS n FROM generate_series(0, $3::int - 1) i) g",
            {prefix, std::to_string(sessions), std::to_string(leases)});
        std::vector<std::vector<std::string>> names(static_cast<std::size_t>(sessions)),
            epochs(names.size());
        for (int r = 0; r < g.rows(); ++r) {
            const auto h = static_cast<std::size_t>(std::stoi(g.text(r, 0)));
            names[h].push_back(g.text(r, 1));
            epochs[h].push_back(g.text(r, 2));
        }
        struct scale_client {
            std::unique_ptr<pg_session> db;
            std::string holder, names_array, epochs_array;
            std::size_t at = 0;
        };
        auto cs =
            open_workers<scale_client>(static_cast<std::size_t>(sessions), [&](std::size_t i) {
                auto c = std::make_unique<scale_client>();
                c->db = std::make_unique<pg_session>(s.pg_conninfo);
                c->holder = "h" + std::to_string(i);
                c->names_array = pg_array(names[i]);
                c->epochs_array = pg_array(epochs[i]);
                c->db->prepare("ren", "SELECT " + ext + "lease_renew($1, $2, $3::bigint)");
                // All of this holder's leases in one statement and one commit.
                c->db->prepare("batch", "SELECT count(" + ext +
                                            "lease_renew(u.n, $1, u.e)) FROM unnest($2::text[], "
                                            "$3::bigint[]) AS u(n, e)");
                return c;
            });
        std::vector<double> single, batch;
        for (int round = 0; round < s.rounds; ++round) {
            single.push_back(
                run_phase(cs.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
                    scale_client& c = *cs[i];
                    const std::size_t k = c.at++ % names[i].size();
                    pg_result r = c.db->run("ren", {names[i][k], c.holder, epochs[i][k]});
                    if (r.is_null(0, 0))
                        throw std::runtime_error("scale: renew of " + names[i][k] + " failed");
                    return 1;
                }).rate());
            batch.push_back(
                run_phase(cs.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
                    scale_client& c = *cs[i];
                    pg_result r = c.db->run("batch", {c.holder, c.names_array, c.epochs_array});
                    const auto done = std::stoll(r.text(0, 0));
                    if (done != static_cast<long long>(names[i].size()))
                        throw std::runtime_error("scale: batched renew renewed too few");
                    return done;
                }).rate());
        }
        const double needed = leases / renew_every_s;
        const auto add = [&](const std::string& how, std::vector<double> v) {
            row r;
            r.section = "scale";
            r.figure = std::to_string(leases) + " leases, " + std::to_string(sessions) +
                       " holders: renewals/s " + how;
            r.clients = sessions;
            r.samples = std::move(v);
            r.value = median(r.samples);
            r.baseline = needed;
            r.baseline_name = "needed (ttl 15 s, renew every 5 s)";
            r.goal = 1.0;
            r.note = "achieved / needed";
            log("scale: " + r.figure + ": " + std::to_string(r.value) + " (needed " +
                std::to_string(needed) + ")");
            out.add(std::move(r));
        };
        add("one renew per transaction", single);
        add("batched, one transaction per holder", batch);
    }
}

void cleanup_pg(const settings& s) {
    try {
        pg_session admin{s.pg_conninfo};
        const std::string ext = extension_prefix(admin);
        admin.exec("SET client_min_messages = warning");
        for (const char* what : {"bare", "fence"})
            admin.exec("DROP SCHEMA IF EXISTS " + bench_schema(s, what) + " CASCADE");
        for (const std::string& like :
             {"b" + s.tag + "-%", "e" + s.tag + "-%", "s" + s.tag + "-%", "f" + s.tag + "-%",
              "m" + s.tag + "-%", "h" + s.tag + "-%", "bench-fence-" + s.tag}) {
            admin.query("DELETE FROM " + ext + "leases WHERE name LIKE $1", {like});
            admin.query("DELETE FROM " + ext + "lease_events WHERE name LIKE $1", {like});
        }
        growth::cleanup(s, admin, ext);
    } catch (const std::exception& e) {
        log(std::string{"cleanup: "} + e.what());
    }
}

} // namespace bench
