/// @file pg_figures.cpp
/// @brief PostgreSQL figures: lease operations against the same operation as
/// one bare UPDATE ... RETURNING, fenced against unfenced INSERT, and how
/// renewal throughput holds up with many leases.
#include "figures.hpp"
#include "pg.hpp"

#include <pglease/fence.hpp>
#include <pqxx/pqxx>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace bench {

namespace {

std::string schema_of(const settings& s, const char* what) {
    return std::string{"bench_"} + what + "_" + s.tag;
}

/// The schema the extension lives in, quoted, with a dot.
std::string ext_prefix(pg_session& db) {
    pg_result r = db.query("SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension "
                           "WHERE extname = 'pg_lease'");
    if (r.rows() != 1)
        throw std::runtime_error("the pg_lease extension is not installed in this database");
    return r.text(0, 0) + ".";
}

// ---------------------------------------------------------------- lease ops

/// Same columns, constraints and fillfactor as the extension's table.
const char* bare_table_sql = R"(
CREATE TABLE %S.leases (
    name        text PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 255),
    holder      text CHECK (octet_length(holder) BETWEEN 1 AND 255),
    epoch       bigint NOT NULL CHECK (epoch > 0),
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    ttl         interval NOT NULL,
    transitions bigint NOT NULL DEFAULT 0,
    owner_role  name NOT NULL
) WITH (fillfactor = 50);
CREATE SEQUENCE %S.epoch_seq AS bigint MINVALUE 1;
)";

std::string subst(std::string sql, const std::string& schema) {
    for (std::size_t at = sql.find("%S"); at != std::string::npos; at = sql.find("%S", at))
        sql.replace(at, 2, schema);
    return sql;
}

struct lease_client {
    std::unique_ptr<pg_session> db;
    std::string holder;
    std::vector<std::string> names; ///< free rows this client may acquire
    std::vector<std::string> epochs; ///< epochs of names[0..held)
    std::size_t renew_at = 0, release_at = 0;
};

void prepare_lease_statements(pg_session& db, bool bare, const std::string& ext, const std::string& bs) {
    if (!bare) {
        db.prepare("acq", "SELECT acquired, epoch FROM " + ext + "lease_acquire($1, $2, $3::interval)");
        db.prepare("ren", "SELECT " + ext + "lease_renew($1, $2, $3::bigint)");
        db.prepare("rel", "SELECT " + ext + "lease_release($1, $2, $3::bigint)");
        return;
    }
    // The same three operations, each one conditional UPDATE ... RETURNING.
    db.prepare("acq", subst("UPDATE %S.leases SET holder = $2, epoch = nextval('%S.epoch_seq'),"
                            " acquired_at = clock_timestamp(), renewed_at = clock_timestamp(),"
                            " expires_at = clock_timestamp() + $3::interval, ttl = $3::interval,"
                            " transitions = transitions + CASE WHEN holder IS DISTINCT FROM $2 THEN 1 ELSE 0 END,"
                            " owner_role = current_user"
                            " WHERE name = $1 AND (holder IS NULL OR expires_at <= clock_timestamp())"
                            " RETURNING true, epoch", bs));
    db.prepare("ren", subst("UPDATE %S.leases SET renewed_at = clock_timestamp(),"
                            " expires_at = clock_timestamp() + ttl"
                            " WHERE name = $1 AND holder = $2 AND epoch = $3::bigint"
                            " AND expires_at > clock_timestamp() RETURNING expires_at", bs));
    db.prepare("rel", subst("UPDATE %S.leases SET holder = NULL, expires_at = LEAST(expires_at, clock_timestamp())"
                            " WHERE name = $1 AND holder = $2 AND epoch = $3::bigint RETURNING true", bs));
}

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
    const std::string ext = ext_prefix(admin);
    const std::string bs = schema_of(s, "bare");
    admin.exec("SET client_min_messages = warning");
    admin.exec("DROP SCHEMA IF EXISTS " + bs + " CASCADE");
    admin.exec("CREATE SCHEMA " + bs);
    admin.exec(subst(bare_table_sql, bs));

    // A pool of free rows per client, in both tables: enough that no client
    // runs out within a phase (the pool bounds the acquire loop's count).
    const int max_clients = *std::max_element(s.clients.begin(), s.clients.end());
    const auto pool = static_cast<int>(std::max(50.0, std::ceil(40000.0 * s.seconds)));
    const std::string prefix = "b" + s.tag + "-";
    log("lease ops: creating " + std::to_string(pool) + " free leases per client count in both tables");
    for (const int n : s.clients) {
        const int per = std::max(10, pool / n);
        const std::string names = "SELECT '" + prefix + std::to_string(n) + "-' || c || '-' || k AS n"
                                  " FROM generate_series(0, " + std::to_string(n - 1) + ") c,"
                                  " generate_series(0, " + std::to_string(per - 1) + ") k";
        admin.exec("SELECT count(" + ext + "lease_release(g.n, 'setup', (" + ext +
                   "lease_acquire(g.n, 'setup', '1 min')).epoch)) FROM (" + names + ") g");
        admin.exec(subst("INSERT INTO %S.leases (name, holder, epoch, acquired_at, renewed_at, expires_at,"
                         " ttl, owner_role) SELECT g.n, NULL, nextval('%S.epoch_seq'), now(), now(), now(),"
                         " '1 min', current_user FROM (" + names + ") g", bs));
    }
    admin.exec("VACUUM ANALYZE " + ext + "leases");
    admin.exec("VACUUM ANALYZE " + bs + ".leases");
    (void)max_clients;

    for (const int n : s.clients) {
        const int per = std::max(10, pool / n);
        std::map<std::string, std::vector<double>> samples; // "ext acquire" -> per round
        std::vector<std::unique_ptr<lease_client>> sides[2];
        for (int bare = 0; bare < 2; ++bare) {
            sides[bare] = open_workers<lease_client>(static_cast<std::size_t>(n), [&](std::size_t i) {
                auto c = std::make_unique<lease_client>();
                c->db = std::make_unique<pg_session>(s.pg_conninfo);
                c->holder = "bench-holder-" + std::to_string(i);
                for (int k = 0; k < per; ++k)
                    c->names.push_back(prefix + std::to_string(n) + "-" + std::to_string(i) + "-" +
                                       std::to_string(k));
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
                    const phase_result r = run_phase(cs.size(), s.seconds,
                                                     [&, op = op](std::size_t i) { return op(*cs[i]); });
                    samples[std::string{bare ? "bare " : "ext "} + name].push_back(r.rate());
                    if (std::string{name} == "acquire")
                        for (auto& c : cs)
                            if (c->epochs.size() == c->names.size())
                                log(std::string{"lease ops: "} + (bare ? "bare" : "ext") + " client used its whole pool of " + std::to_string(per) +
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
            log("lease ops: " + r.figure + " x" + std::to_string(n) + ": " + std::to_string(r.value) +
                " vs " + std::to_string(r.baseline));
            out.add(std::move(r));
        }
    }
}

// ---------------------------------------------------------------- fence

namespace {

const char* fence_lease_name(const settings& s, std::string& buf) {
    buf = "bench-fence-" + s.tag;
    return buf.c_str();
}

struct fence_client {
    std::unique_ptr<pg_session> db;
    std::unique_ptr<pqxx::connection> pqxx_conn;
};

enum class fence_kind { plain, plain_tx, use, setting, client_lib };

} // namespace

void run_fence(const settings& s, report& out) {
    pg_session admin{s.pg_conninfo};
    const std::string ext = ext_prefix(admin);
    const std::string fs = schema_of(s, "fence");
    std::string lease;
    fence_lease_name(s, lease);
    admin.exec("SET client_min_messages = warning");
    admin.exec("DROP SCHEMA IF EXISTS " + fs + " CASCADE");
    admin.exec("CREATE SCHEMA " + fs);
    for (const char* t : {"plain", "fenced"})
        admin.exec("CREATE TABLE " + fs + "." + t +
                   " (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text NOT NULL, epoch bigint)");
    admin.exec("SELECT " + ext + "lease_fence('" + fs + ".fenced', '" + lease + "')");
    pg_result g = admin.query("SELECT acquired, epoch FROM " + ext + "lease_acquire($1, 'bench-fence-writer', '1 hour')",
                              {lease});
    if (g.text(0, 0) != "t")
        throw std::runtime_error("cannot acquire the fence lease " + lease);
    const std::string epoch = g.text(0, 1);
    const std::string plain = fs + ".plain", fenced = fs + ".fenced";
    const std::string payload = "payload of a typical row, some tens of bytes";

    const auto truncate = [&] {
        admin.exec("TRUNCATE " + plain);
        admin.exec("BEGIN; SELECT " + ext + "lease_use('" + lease + "', " + epoch + "); TRUNCATE " + fenced +
                   "; COMMIT");
    };

    struct variant {
        const char* key;
        fence_kind kind;
        bool rows1000;
    };
    const variant variants[] = {
        {"plain 1", fence_kind::plain, false},    {"use 1", fence_kind::use, false},
        {"setting 1", fence_kind::setting, false}, {"client 1", fence_kind::client_lib, false},
        {"plaintx 1", fence_kind::plain_tx, false},
        {"plain 1000", fence_kind::plain, true},  {"use 1000", fence_kind::use, true},
        {"setting 1000", fence_kind::setting, true},
    };

    for (const int n : s.clients) {
        std::map<std::string, std::vector<double>> samples;
        std::map<std::string, std::vector<std::unique_ptr<fence_client>>> clients;
        for (const auto& v : variants) {
            clients[v.key] = open_workers<fence_client>(static_cast<std::size_t>(n), [&](std::size_t) {
                auto c = std::make_unique<fence_client>();
                if (v.kind == fence_kind::client_lib) {
                    c->pqxx_conn = std::make_unique<pqxx::connection>(s.pg_conninfo);
                    c->pqxx_conn->prepare("ins", "INSERT INTO " + fenced + " (payload) VALUES ($1)");
                    return c;
                }
                std::string conninfo = s.pg_conninfo;
                if (v.kind == fence_kind::setting)
                    conninfo += " options='-c pg_lease.epoch=" + epoch + "'";
                c->db = std::make_unique<pg_session>(conninfo);
                const bool unfenced = v.kind == fence_kind::plain || v.kind == fence_kind::plain_tx;
                const std::string table = unfenced ? plain : fenced;
                // The plain table gets the epoch from the writer, the fenced
                // one from the trigger, which stamps the token into the row.
                const std::string epoch_value = unfenced ? "$2::bigint" : "NULL";
                const std::string params2 = v.kind == fence_kind::plain ? "" : "";
                (void)params2;
                if (v.rows1000)
                    c->db->prepare("ins", "INSERT INTO " + table + " (payload, epoch) SELECT $1, " + epoch_value +
                                              " FROM generate_series(1, 1000)");
                else
                    c->db->prepare("ins", "INSERT INTO " + table + " (payload, epoch) VALUES ($1, " + epoch_value + ")");
                c->db->prepare("use", "SELECT " + ext + "lease_use($1, $2::bigint)");
                return c;
            });
        }
        for (int round = 0; round < s.rounds; ++round) {
            // The baseline first, then the fenced variants; reversed every
            // other round, so the baseline is always next to one of them.
            const std::size_t count = std::size(variants);
            for (std::size_t k = 0; k < count; ++k) {
                const std::size_t group = k < 5 ? 0 : 5, size = k < 5 ? 5 : 3, at = k - group;
                const variant& v = variants[group + (round % 2 ? size - 1 - at : at)];
                auto& cs = clients[v.key];
                truncate();
                const phase_result r = run_phase(cs.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
                    fence_client& c = *cs[i];
                    switch (v.kind) {
                    case fence_kind::plain:
                        c.db->run("ins", {payload, epoch});
                        break;
                    case fence_kind::setting:
                        c.db->run("ins", {payload});
                        break;
                    case fence_kind::plain_tx:
                        c.db->pipeline({{"", "BEGIN", {}}, {"ins", "", {payload, epoch}}, {"", "COMMIT", {}}});
                        break;
                    case fence_kind::use:
                        // BEGIN, lease_use, INSERT, COMMIT in one round trip.
                        c.db->pipeline({{"", "BEGIN", {}}, {"use", "", {lease, epoch}},
                                        {"ins", "", {payload}}, {"", "COMMIT", {}}});
                        break;
                    case fence_kind::client_lib: {
                        const pglease::fence_token token{lease, std::stoll(epoch), ""};
                        // fenced_work: BEGIN and lease_use in one round trip.
                        pglease::run_fenced(*c.pqxx_conn, token, [&](pqxx::transaction_base& tx) {
                            tx.exec_prepared0("ins", payload);
                        });
                        break;
                    }
                    }
                    return 1;
                });
                samples[v.key].push_back(r.rate());
            }
        }
        const auto add = [&](const char* key, const char* base, const std::string& figure, double goal,
                             const std::string& note) {
            row r;
            r.section = "fence";
            r.figure = figure;
            r.clients = n;
            r.samples = samples[key];
            r.baseline_samples = samples[base];
            r.value = median(r.samples);
            r.baseline = median(r.baseline_samples);
            r.baseline_name = std::string{base} == "plaintx 1" ? "unfenced BEGIN+INSERT+COMMIT" : "unfenced INSERT";
            r.goal = goal;
            r.note = note;
            log("fence: " + figure + " x" + std::to_string(n) + ": " + std::to_string(r.value) + " vs " +
                std::to_string(r.baseline));
            out.add(std::move(r));
        };
        add("use 1", "plain 1", "fenced INSERT 1 row/tx, lease_use", 0.9,
            "BEGIN+lease_use+INSERT+COMMIT pipelined (1 round trip)");
        add("setting 1", "plain 1", "fenced INSERT 1 row/tx, pg_lease.epoch", 0.9, "session setting, autocommit");
        add("use 1", "plaintx 1", "fenced INSERT 1 row/tx, lease_use, vs the same BEGIN/INSERT/COMMIT unfenced", 0,
            "isolates the trigger from lease_use's extra statement");
        add("client 1", "plain 1", "fenced INSERT 1 row/tx, pglease::run_fenced", 0,
            "C++ client: 3 round trips (BEGIN+lease_use, INSERT, COMMIT)");
        add("use 1000", "plain 1000", "fenced INSERT 1000 rows/stmt, lease_use", 0.85, "rows/s = 1000 x statements/s");
        add("setting 1000", "plain 1000", "fenced INSERT 1000 rows/stmt, pg_lease.epoch", 0.85, "");
        // report the 1000-row figures in rows/s
        for (const char* f : {"fenced INSERT 1000 rows/stmt, lease_use", "fenced INSERT 1000 rows/stmt, pg_lease.epoch"}) {
            auto* r = const_cast<row*>(out.find(f, n));
            if (r == nullptr)
                continue;
            r->unit = "rows/s";
            r->value *= 1000;
            r->baseline *= 1000;
            for (auto& x : r->samples)
                x *= 1000;
            for (auto& x : r->baseline_samples)
                x *= 1000;
        }
    }
    truncate();
}

// ---------------------------------------------------------------- scale

void run_scale(const settings& s, report& out) {
    pg_session admin{s.pg_conninfo};
    const std::string ext = ext_prefix(admin);
    constexpr double ttl_s = 15, renew_every_s = ttl_s / 3; // client-go's and pglease's defaults
    for (const int leases : s.scale_leases) {
        const int sessions = std::min(s.scale_sessions, leases);
        const std::string prefix = "s" + s.tag + "-" + std::to_string(leases) + "-";
        log("scale: granting " + std::to_string(leases) + " leases to " + std::to_string(sessions) + " holders");
        pg_result g = admin.query(
            "SELECT g.i % $2::int, g.n, (" + ext + "lease_acquire(g.n, 'h' || (g.i % $2::int), '1 hour')).epoch"
            " FROM (SELECT i, $1 || i AS n FROM generate_series(0, $3::int - 1) i) g",
            {prefix, std::to_string(sessions), std::to_string(leases)});
        std::vector<std::vector<std::string>> names(static_cast<std::size_t>(sessions)), epochs(names.size());
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
        auto cs = open_workers<scale_client>(static_cast<std::size_t>(sessions), [&](std::size_t i) {
            auto c = std::make_unique<scale_client>();
            c->db = std::make_unique<pg_session>(s.pg_conninfo);
            c->holder = "h" + std::to_string(i);
            c->names_array = pg_array(names[i]);
            c->epochs_array = pg_array(epochs[i]);
            c->db->prepare("ren", "SELECT " + ext + "lease_renew($1, $2, $3::bigint)");
            // All of this holder's leases in one statement and one commit.
            c->db->prepare("batch", "SELECT count(" + ext + "lease_renew(u.n, $1, u.e)) FROM unnest($2::text[], "
                                    "$3::bigint[]) AS u(n, e)");
            return c;
        });
        std::vector<double> single, batch;
        for (int round = 0; round < s.rounds; ++round) {
            single.push_back(run_phase(cs.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
                                 scale_client& c = *cs[i];
                                 const std::size_t k = c.at++ % names[i].size();
                                 pg_result r = c.db->run("ren", {names[i][k], c.holder, epochs[i][k]});
                                 if (r.is_null(0, 0))
                                     throw std::runtime_error("scale: renew of " + names[i][k] + " failed");
                                 return 1;
                             }).rate());
            batch.push_back(run_phase(cs.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
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
            r.figure = std::to_string(leases) + " leases, " + std::to_string(sessions) + " holders: renewals/s " + how;
            r.clients = sessions;
            r.samples = std::move(v);
            r.value = median(r.samples);
            r.baseline = needed;
            r.baseline_name = "needed (ttl 15 s, renew every 5 s)";
            r.goal = 1.0;
            r.note = "achieved / needed";
            log("scale: " + r.figure + ": " + std::to_string(r.value) + " (needed " + std::to_string(needed) + ")");
            out.add(std::move(r));
        };
        add("one renew per transaction", single);
        add("batched, one transaction per holder", batch);
    }
}

void cleanup_pg(const settings& s) {
    try {
        pg_session admin{s.pg_conninfo};
        const std::string ext = ext_prefix(admin);
        admin.exec("SET client_min_messages = warning");
        for (const char* what : {"bare", "fence"})
            admin.exec("DROP SCHEMA IF EXISTS " + schema_of(s, what) + " CASCADE");
        for (const std::string& like : {"b" + s.tag + "-%", "e" + s.tag + "-%", "s" + s.tag + "-%", "f" + s.tag + "-%",
                                       "h" + s.tag + "-%", "bench-fence-" + s.tag}) {
            admin.query("DELETE FROM " + ext + "leases WHERE name LIKE $1", {like});
            admin.query("DELETE FROM " + ext + "lease_events WHERE name LIKE $1", {like});
        }
    } catch (const std::exception& e) {
        log(std::string{"cleanup: "} + e.what());
    }
}

} // namespace bench
