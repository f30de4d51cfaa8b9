/// @file pg_growth_state.cpp
/// @brief The growth section's server state: filler rows in leases and
/// lease_events, and how many tables are fenced.
#include "pg_growth.hpp"
#include "pg_names.hpp"

#include <algorithm>
#include <stdexcept>

namespace bench::growth {

namespace {

constexpr std::int64_t fill_chunk = 1000000; ///< rows per INSERT ... SELECT

double seconds_since(steady::time_point start) {
    return std::chrono::duration<double>(steady::now() - start).count();
}

std::int64_t count_rows(pg_session& db, const std::string& table) {
    return std::stoll(db.query("SELECT count(*) FROM " + table).text(0, 0));
}

} // namespace

names make_names(const settings& s, pg_session& db) {
    names n;
    n.ext = extension_prefix(db);
    n.schema = bench_schema(s, "growth");
    n.prefix = "g" + s.tag + "-";
    n.renew_lease = n.prefix + "renew";
    n.grant_lease = n.prefix + "grant";
    n.fence_lease = n.prefix + "fence";
    return n;
}

server_state::server_state(pg_session& db, names n, int max_fenced_tables)
    : m_db(db)
    , m_names(std::move(n))
    , m_max_fenced(std::max(1, max_fenced_tables)) {
    const std::string& sc = m_names.schema;
    m_db.exec("SET client_min_messages = warning");
    m_db.exec("DROP SCHEMA IF EXISTS " + sc + " CASCADE");
    m_db.exec("CREATE SCHEMA " + sc);
    // The unfenced reference and the fenced tables have the same shape.
    const std::string shape = " (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text "
                              "NOT NULL, epoch bigint)";
    m_db.exec("CREATE TABLE " + sc + ".plain" + shape);
    for (int i = 0; i < m_max_fenced; ++i)
        m_db.exec("CREATE TABLE " + sc + ".fenced_" + std::to_string(i) + shape);
    m_db.exec("SELECT " + m_names.ext + "lease_fence('" + sc + ".fenced_0', '" +
              m_names.fence_lease + "')");
    // Dead rows other sections left behind are not part of any size.
    m_db.exec("VACUUM ANALYZE " + m_names.ext + "leases");
    m_db.exec("VACUUM ANALYZE " + m_names.ext + "lease_events");
}

std::int64_t server_state::leases() {
    return count_rows(m_db, m_names.ext + "leases");
}

std::int64_t server_state::events() {
    return count_rows(m_db, m_names.ext + "lease_events");
}

void server_state::settle(const std::string& table) {
    // What autovacuum would have done by now, and no checkpoint left over
    // from the fill to fall into the measurement.
    m_db.exec("VACUUM ANALYZE " + m_names.ext + table);
    m_db.exec("CHECKPOINT");
}

void server_state::fill_leases(std::int64_t target) {
    const std::int64_t add = target - leases();
    if (add <= 0)
        return;
    const auto start = steady::now();
    log("growth: adding " + std::to_string(add) + " filler leases");
    for (std::int64_t done = 0; done < add; done += fill_chunk) {
        const std::int64_t first = m_filler_leases + done + 1;
        const std::int64_t last = m_filler_leases + std::min(add, done + fill_chunk);
        // Half held by one of 1000 holders (ttl 15 s, so they expire during
        // the run as abandoned leases do), half free.
        m_db.query("INSERT INTO " + m_names.ext +
                       "leases (name, holder, epoch, acquired_at, renewed_at, expires_at, ttl,"
                       " transitions, owner_role)"
                       " SELECT $1 || 'f' || j, CASE WHEN j % 2 = 0 THEN 'h' || j % 1000 END,"
                       " nextval('" +
                       m_names.ext +
                       "lease_epoch_seq'), now() - interval '1 hour', now(),"
                       " now() + CASE WHEN j % 2 = 0 THEN interval '15 s' ELSE interval '-1 s' END,"
                       " interval '15 s', 1 + j % 7, current_user"
                       " FROM generate_series($2::bigint, $3::bigint) j",
                   {m_names.prefix, std::to_string(first), std::to_string(last)});
    }
    m_filler_leases += add;
    settle("leases");
    m_fill_seconds += seconds_since(start);
    log("growth: leases filled in " + std::to_string(seconds_since(start)) + " s");
}

void server_state::fill_events(std::int64_t target, std::int64_t all_target) {
    const std::int64_t add = target - events();
    if (add <= 0)
        return;
    const auto start = steady::now();
    log("growth: adding " + std::to_string(add) + " events");
    // Filler events name the filler leases (7919 is prime: consecutive
    // events go to scattered leases, as a real history interleaves them),
    // or 1000 other names when there are none; one in 1000 names a
    // measured lease, which so has a busy lease's history.
    const std::string filler_name = m_filler_leases > 0 ? "$1 || 'f' || (1 + j * 7919 % " +
                                                              std::to_string(m_filler_leases) + ")"
                                                        : std::string{"$1 || 'e' || j % 1000"};
    const std::string name_sql = "CASE WHEN j % 1000 = 0 THEN (ARRAY[$4, $5, $6])[1 + j / 1000 % 3]"
                                 " ELSE " +
                                 filler_name + " END";
    const std::string total = std::to_string(std::max(all_target, target));
    for (std::int64_t done = 0; done < add; done += fill_chunk) {
        const std::int64_t first = m_filler_events + done + 1;
        const std::int64_t last = m_filler_events + std::min(add, done + fill_chunk);
        m_db.query("INSERT INTO " + m_names.ext +
                       "lease_events (time, event, name, holder, epoch, expires_at, role)"
                       " SELECT t, (ARRAY['acquired', 'released', 'takeover'])[1 + j % 3], " +
                       name_sql +
                       ", 'h' || j % 1000, j, t + interval '15 s', current_user"
                       " FROM generate_series($2::bigint, $3::bigint) j,"
                       " LATERAL (SELECT now() - interval '29 days' * (1 - j::float8 / " +
                       total + ") AS t) x",
                   {m_names.prefix, std::to_string(first), std::to_string(last),
                    m_names.renew_lease, m_names.grant_lease, m_names.fence_lease});
        if (add > fill_chunk)
            log("growth: " + std::to_string(std::min(add, done + fill_chunk)) + " events after " +
                std::to_string(seconds_since(start)) + " s");
    }
    m_filler_events += add;
    settle("lease_events");
    m_fill_seconds += seconds_since(start);
    log("growth: events filled in " + std::to_string(seconds_since(start)) + " s");
}

void server_state::fence(int tables, bool one_lease) {
    tables = std::clamp(tables, 1, m_max_fenced);
    const std::string& ext = m_names.ext;
    const std::string table_sql = "format('%I.%I', $1::text, 'fenced_' || i)::regclass";
    if (!one_lease)
        m_db.query("SELECT " + ext +
                       "lease_acquire($1 || 'fence-' || i, $2, '1 hour')"
                       " FROM generate_series(1, $3::int - 1) i",
                   {m_names.prefix, m_names.holder, std::to_string(tables)});
    m_db.query("SELECT " + ext + "lease_fence(" + table_sql +
                   ", CASE WHEN $2::bool THEN $3 ELSE $4 || 'fence-' || i END)"
                   " FROM generate_series(1, $5::int - 1) i",
               {m_names.schema, one_lease ? "true" : "false", m_names.fence_lease, m_names.prefix,
                std::to_string(tables)});
    m_db.query("SELECT " + ext + "lease_unfence(" + table_sql +
                   ") FROM generate_series($2::int, $3::int - 1) i",
               {m_names.schema, std::to_string(tables), std::to_string(m_fenced)});
    m_fenced = tables;
}

void server_state::drop_fence_leases() {
    fence(1, true);
    const std::string like = m_names.prefix + "fence-%";
    m_db.query("DELETE FROM " + m_names.ext + "leases WHERE name LIKE $1", {like});
    m_db.query("DELETE FROM " + m_names.ext + "lease_events WHERE name LIKE $1", {like});
}

void cleanup(const settings& s, pg_session& db, const std::string& ext) {
    const std::string like = "g" + s.tag + "-%";
    db.exec("SET client_min_messages = warning");
    db.exec("DROP SCHEMA IF EXISTS " + bench_schema(s, "growth") + " CASCADE");
    db.query("DELETE FROM " + ext + "leases WHERE name LIKE $1", {like});
    // Deleting ten million rows one by one takes minutes; when nothing else
    // is left in the table (a throwaway server), TRUNCATE does it at once.
    db.exec("BEGIN");
    db.exec("LOCK TABLE " + ext + "lease_events IN SHARE ROW EXCLUSIVE MODE");
    const bool others =
        db.query("SELECT EXISTS (SELECT FROM " + ext + "lease_events WHERE name NOT LIKE $1)",
                 {like})
            .text(0, 0) == "t";
    if (others)
        db.query("DELETE FROM " + ext + "lease_events WHERE name LIKE $1", {like});
    else
        db.exec("TRUNCATE " + ext + "lease_events");
    db.exec("COMMIT");
}

} // namespace bench::growth
