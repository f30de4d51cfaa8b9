/// @file pg_fence_figures.cpp
/// @brief PostgreSQL figures: a fenced INSERT against an unfenced one, and
/// run_fenced against a plain transaction.
#include "figures.hpp"
#include "pg.hpp"
#include "pg_names.hpp"

#include <pglease/fence.hpp>
#include <pqxx/pqxx>

#include <map>
#include <stdexcept>

namespace bench {

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
    const std::string ext = extension_prefix(admin);
    const std::string fs = bench_schema(s, "fence");
    std::string lease;
    fence_lease_name(s, lease);
    admin.exec("SET client_min_messages = warning");
    admin.exec("DROP SCHEMA IF EXISTS " + fs + " CASCADE");
    admin.exec("CREATE SCHEMA " + fs);
    for (const char* t : {"plain", "fenced"})
        admin.exec("CREATE TABLE " + fs + "." + t +
                   " (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text NOT NULL, "
                   "epoch bigint)");
    admin.exec("SELECT " + ext + "lease_fence('" + fs + ".fenced', '" + lease + "')");
    pg_result g = admin.query("SELECT acquired, epoch FROM " + ext +
                                  "lease_acquire($1, 'bench-fence-writer', '1 hour')",
                              {lease});
    if (g.text(0, 0) != "t")
        throw std::runtime_error("cannot acquire the fence lease " + lease);
    const std::string epoch = g.text(0, 1);
    const std::string plain = fs + ".plain", fenced = fs + ".fenced";
    const std::string payload = "payload of a typical row, some tens of bytes";

    const auto truncate = [&] {
        admin.exec("TRUNCATE " + plain);
        admin.exec("BEGIN; SELECT " + ext + "lease_use('" + lease + "', " + epoch + "); TRUNCATE " +
                   fenced + "; COMMIT");
    };

    struct variant {
        const char* key;
        fence_kind kind;
        bool rows1000;
    };
    const variant variants[] = {
        {"plain 1", fence_kind::plain, false},      {"use 1", fence_kind::use, false},
        {"setting 1", fence_kind::setting, false},  {"client 1", fence_kind::client_lib, false},
        {"plaintx 1", fence_kind::plain_tx, false}, {"plain 1000", fence_kind::plain, true},
        {"use 1000", fence_kind::use, true},        {"setting 1000", fence_kind::setting, true},
    };

    for (const int n : s.clients) {
        std::map<std::string, std::vector<double>> samples;
        std::map<std::string, std::vector<std::unique_ptr<fence_client>>> clients;
        for (const auto& v : variants) {
            clients[v.key] =
                open_workers<fence_client>(static_cast<std::size_t>(n), [&](std::size_t) {
                    auto c = std::make_unique<fence_client>();
                    if (v.kind == fence_kind::client_lib) {
                        c->pqxx_conn = std::make_unique<pqxx::connection>(s.pg_conninfo);
                        c->pqxx_conn->prepare("ins",
                                              "INSERT INTO " + fenced + " (payload) VALUES ($1)");
                        return c;
                    }
                    std::string conninfo = s.pg_conninfo;
                    if (v.kind == fence_kind::setting)
                        conninfo += " options='-c pg_lease.epoch=" + epoch + "'";
                    c->db = std::make_unique<pg_session>(conninfo);
                    const bool unfenced =
                        v.kind == fence_kind::plain || v.kind == fence_kind::plain_tx;
                    const std::string table = unfenced ? plain : fenced;
                    // The plain table gets the epoch from the writer, the fenced
                    // one from the trigger, which stamps the token into the row.
                    const std::string epoch_value = unfenced ? "$2::bigint" : "NULL";
                    const std::string params2 = v.kind == fence_kind::plain ? "" : "";
                    (void)params2;
                    if (v.rows1000)
                        c->db->prepare("ins", "INSERT INTO " + table +
                                                  " (payload, epoch) SELECT $1, " + epoch_value +
                                                  " FROM generate_series(1, 1000)");
                    else
                        c->db->prepare("ins", "INSERT INTO " + table +
                                                  " (payload, epoch) VALUES ($1, " + epoch_value +
                                                  ")");
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
                const phase_result r =
                    run_phase(cs.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
                        fence_client& c = *cs[i];
                        switch (v.kind) {
                        case fence_kind::plain:
                            c.db->run("ins", {payload, epoch});
                            break;
                        case fence_kind::setting:
                            c.db->run("ins", {payload});
                            break;
                        case fence_kind::plain_tx:
                            c.db->pipeline({{"", "BEGIN", {}},
                                            {"ins", "", {payload, epoch}},
                                            {"", "COMMIT", {}}});
                            break;
                        case fence_kind::use:
                            // BEGIN, lease_use, INSERT, COMMIT in one round trip.
                            c.db->pipeline({{"", "BEGIN", {}},
                                            {"use", "", {lease, epoch}},
                                            {"ins", "", {payload}},
                                            {"", "COMMIT", {}}});
                            break;
                        case fence_kind::client_lib: {
                            const pglease::fence_token token{lease, std::stoll(epoch), ""};
                            // fenced_work: BEGIN and lease_use in one round trip.
                            pglease::run_fenced(*c.pqxx_conn, token,
                                                [&](pqxx::transaction_base& tx) {
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
        const auto add = [&](const char* key, const char* base, const std::string& figure,
                             double goal, const std::string& note) {
            row r;
            r.section = "fence";
            r.figure = figure;
            r.clients = n;
            r.samples = samples[key];
            r.baseline_samples = samples[base];
            r.value = median(r.samples);
            r.baseline = median(r.baseline_samples);
            r.baseline_name = std::string{base} == "plaintx 1" ? "unfenced BEGIN+INSERT+COMMIT"
                                                               : "unfenced INSERT";
            r.goal = goal;
            r.note = note;
            log("fence: " + figure + " x" + std::to_string(n) + ": " + std::to_string(r.value) +
                " vs " + std::to_string(r.baseline));
            out.add(std::move(r));
        };
        add("use 1", "plain 1", "fenced INSERT 1 row/tx, lease_use", 0.9,
            "BEGIN+lease_use+INSERT+COMMIT pipelined (1 round trip)");
        add("setting 1", "plain 1", "fenced INSERT 1 row/tx, pg_lease.epoch", 0.9,
            "session setting, autocommit");
        add("use 1", "plaintx 1",
            "fenced INSERT 1 row/tx, lease_use, vs the same BEGIN/INSERT/COMMIT unfenced", 0,
            "isolates the trigger from lease_use's extra statement");
        add("client 1", "plain 1", "fenced INSERT 1 row/tx, pglease::run_fenced", 0,
            "C++ client: 3 round trips (BEGIN+lease_use, INSERT, COMMIT)");
        add("use 1000", "plain 1000", "fenced INSERT 1000 rows/stmt, lease_use", 0.85,
            "rows/s = 1000 x statements/s");
        add("setting 1000", "plain 1000", "fenced INSERT 1000 rows/stmt, pg_lease.epoch", 0.85, "");
        // report the 1000-row figures in rows/s
        for (const char* f : {"fenced INSERT 1000 rows/stmt, lease_use",
                              "fenced INSERT 1000 rows/stmt, pg_lease.epoch"}) {
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

} // namespace bench
