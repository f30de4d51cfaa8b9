/// @file pg_lease_ops.cpp
/// @brief PostgreSQL figures: lease operations against the same operation as
/// one bare UPDATE ... RETURNING on a table of the leases' shape.
#include "figures.hpp"
#include "pg.hpp"
#include "pg_bare.hpp"
#include "pg_names.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace bench {

namespace {

struct lease_client {
    std::unique_ptr<pg_session> db;
    std::string holder;
    std::vector<std::string> names;  ///< free rows this client may acquire
    std::vector<std::string> epochs; ///< epochs of names[0..held)
    std::size_t renew_at = 0, release_at = 0;
};

std::int64_t op_acquire(lease_client& c) {
    const std::size_t i = c.epochs.size();
    if (i >= c.names.size())
        return 0; // pool used up: this client is done for the phase
    pg_result r = c.db->run("acq", {c.names[i], c.holder, "60 s"});
    if (r.rows() != 1 || r.text(0, 0) != "t")
        throw std::runtime_error("acquire of free lease " + c.names[i] + " was refused");
    c.epochs.push_back(r.text(0, 1));
    return 1;
}

std::int64_t op_renew(lease_client& c) {
    if (c.epochs.empty())
        return 0;
    const std::size_t i = c.renew_at++ % c.epochs.size();
    pg_result r = c.db->run("ren", {c.names[i], c.holder, c.epochs[i]});
    if (r.rows() != 1 || r.is_null(0, 0))
        throw std::runtime_error("renew of held lease " + c.names[i] + " failed");
    return 1;
}

std::int64_t op_release(lease_client& c) {
    if (c.release_at >= c.epochs.size())
        return 0;
    const std::size_t i = c.release_at++;
    pg_result r = c.db->run("rel", {c.names[i], c.holder, c.epochs[i]});
    if (r.rows() != 1 || r.text(0, 0) != "t")
        throw std::runtime_error("release of held lease " + c.names[i] + " failed");
    return 1;
}

/// Releases whatever a phase that ended at its deadline left held.
void finish_round(std::vector<std::unique_ptr<lease_client>>& cs) {
    for (auto& c : cs) {
        while (op_release(*c) > 0) {
        }
        c->epochs.clear();
        c->renew_at = c->release_at = 0;
    }
}

} // namespace

void run_lease_ops(const settings& s, report& out) {
    pg_session admin{s.pg_conninfo};
    const std::string ext = extension_prefix(admin);
    const std::string bs = bench_schema(s, "bare");
    admin.exec("SET client_min_messages = warning");
    admin.exec("DROP SCHEMA IF EXISTS " + bs + " CASCADE");
    admin.exec("CREATE SCHEMA " + bs);
    create_bare_leases(admin, bs, ext);

    // A pool of free rows per client, in both tables: enough that no client
    // runs out within a phase (the pool bounds the acquire loop's count).
    const int max_clients = *std::max_element(s.clients.begin(), s.clients.end());
    const auto pool = static_cast<int>(std::max(50.0, std::ceil(40000.0 * s.seconds)));
    const std::string prefix = "b" + s.tag + "-";
    log("lease ops: creating " + std::to_string(pool) +
        " free leases per client count in both tables");
    for (const int n : s.clients) {
        const int per = std::max(10, pool / n);
        const std::string names = "SELECT '" + prefix + std::to_string(n) +
                                  "-' || c || '-' || k AS n"
                                  " FROM generate_series(0, " +
                                  std::to_string(n - 1) +
                                  ") c,"
                                  " generate_series(0, " +
                                  std::to_string(per - 1) + ") k";
        admin.exec("SELECT count(" + ext + "lease_release(g.n, 'setup', (" + ext +
                   "lease_acquire(g.n, 'setup', '1 min')).epoch)) FROM (" + names + ") g");
        admin.exec(subst(
            "INSERT INTO %S.leases (name, holder, epoch, acquired_at, renewed_at, expires_at,"
            " ttl, owner_role) SELECT g.n, NULL, nextval('%S.epoch_seq'), now(), now(), now(),"
            " '1 min', current_user FROM (" +
                names + ") g",
            bs));
    }
    admin.exec("VACUUM ANALYZE " + ext + "leases");
    admin.exec("VACUUM ANALYZE " + bs + ".leases");
    (void)max_clients;

    for (const int n : s.clients) {
        const int per = std::max(10, pool / n);
        std::map<std::string, std::vector<double>> samples; // "ext acquire" -> per round
        std::vector<std::unique_ptr<lease_client>> sides[2];
        for (int bare = 0; bare < 2; ++bare) {
            sides[bare] =
                open_workers<lease_client>(static_cast<std::size_t>(n), [&](std::size_t i) {
                    auto c = std::make_unique<lease_client>();
                    c->db = std::make_unique<pg_session>(s.pg_conninfo);
                    c->holder = "bench-holder-" + std::to_string(i);
                    for (int k = 0; k < per; ++k)
                        c->names.push_back(prefix + std::to_string(n) + "-" + std::to_string(i) +
                                           "-" + std::to_string(k));
                    prepare_lease_statements(*c->db, bare != 0, ext, bs);
                    return c;
                });
        }
        const std::pair<const char*, std::int64_t (*)(lease_client&)> phases[] = {
            {"acquire", op_acquire}, {"renew", op_renew}, {"release", op_release}};
        for (int round = 0; round < s.rounds; ++round) {
            // Each phase runs on both sides back to back, in ABBA order from
            // round to round, so a change in background load hits both alike.
            for (const auto& [name, op] : phases) {
                for (int k = 0; k < 2; ++k) {
                    const int bare = (round + k) % 2;
                    auto& cs = sides[bare];
                    const phase_result r = run_phase(
                        cs.size(), s.seconds, [&, op = op](std::size_t i) { return op(*cs[i]); });
                    samples[std::string{bare ? "bare " : "ext "} + name].push_back(r.rate());
                    if (std::string{name} == "acquire")
                        for (auto& c : cs)
                            if (c->epochs.size() == c->names.size())
                                log(std::string{"lease ops: "} + (bare ? "bare" : "ext") +
                                    " client used its whole pool of " + std::to_string(per) +
                                    " free leases; acquire rate is a lower bound");
                }
            }
            for (auto& cs : sides)
                finish_round(cs);
        }
        const struct {
            const char* op;
            const char* fn;
            double goal;
        } ops[] = {{"acquire", "lease_acquire (free lease)", 0.85},
                   {"renew", "lease_renew", 0.9},
                   {"release", "lease_release", 0}};
        for (const auto& o : ops) {
            row r;
            r.section = "lease";
            r.figure = o.fn;
            r.clients = n;
            r.samples = samples[std::string{"ext "} + o.op];
            r.baseline_samples = samples[std::string{"bare "} + o.op];
            r.value = median(r.samples);
            r.baseline = median(r.baseline_samples);
            r.baseline_name = "bare UPDATE";
            r.goal = o.goal;
            r.note = "durable (synchronous_commit on, fsync on)";
            log("lease ops: " + r.figure + " x" + std::to_string(n) + ": " +
                std::to_string(r.value) + " vs " + std::to_string(r.baseline));
            out.add(std::move(r));
        }
    }
}

} // namespace bench
