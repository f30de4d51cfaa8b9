/// @file pg_growth.cpp
/// @brief PostgreSQL figures: how the latency of lease_renew, of a grant
/// and a release, and the fence's overhead on a one-row INSERT change as
/// leases grows, as lease_events grows, and with more fenced tables.
///
/// Every call is timed alone (one client), alternating call by call with
/// its reference, which never grows: the same operation as a bare UPDATE on
/// a two-row table of the leases' shape, or an INSERT into an unfenced table
/// of the fenced one's shape.  Load from elsewhere hits both alike; the
/// ratio is the median over rounds of p50 / p50.  Each round measures twice:
/// durable calls, and the same work rolled back (BEGIN; call; ROLLBACK in
/// one round trip; a lease_release is not measured so).  The commit's WAL
/// flush is the same for any table size, and it is the part of a call that
/// other jobs' disk traffic stretches (to a 4 ms tick on a shared VM): rolled
/// back, what the server's own work costs is no longer hidden behind it.
/// synchronous_commit off would not do: the lease functions raise it to on.
#include "pg_growth.hpp"
#include "figures.hpp"
#include "pg_bare.hpp"

#include <array>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace bench {

namespace {

using growth::names;
using growth::server_state;

enum figure { renew, grant, release, fence, figure_count };

struct figure_info {
    const char* name;      ///< row and column name
    const char* reference; ///< what it is measured against
};
constexpr std::array<figure_info, figure_count> figure_infos{{
    {"lease_renew", "bare UPDATE"},
    {"lease_acquire (free lease)", "bare UPDATE"},
    {"lease_release", "bare UPDATE"},
    {"fenced INSERT 1 row", "unfenced INSERT"},
}};

/// Latencies (us) of one figure at one point; [0] pg_lease, [1] reference.
struct latencies {
    std::array<std::vector<double>, 2> all;       ///< every call, all rounds
    std::array<std::vector<double>, 2> round_p50; ///< p50 of each round
};

enum commit_mode { durable, rolled_back, mode_count };
constexpr std::array<const char*, mode_count> mode_names{"durable",
                                                         "rolled back (BEGIN; call; ROLLBACK)"};

using figure_latencies = std::array<latencies, figure_count>;

/// One state of the server, and what was measured in it.
struct point {
    std::string grows; ///< leases, lease_events, fenced tables
    std::string size;
    std::int64_t leases = 0, events = 0;
    std::array<figure_latencies, mode_count> modes;
};

double timed_us(const std::function<void()>& call) {
    const auto start = steady::now();
    call();
    return std::chrono::duration<double, std::micro>(steady::now() - start).count();
}

/// The four sessions of the probes: pg_lease's calls, their bare UPDATEs,
/// fenced INSERTs (token from pg_lease.epoch), unfenced INSERTs.
class probes {
public:
    probes(const settings& s, pg_session& admin, const names& n, const std::string& fence_epoch)
        : m_names(n)
        , m_fence_epoch(fence_epoch)
        , m_ext(s.pg_conninfo)
        , m_bare(s.pg_conninfo)
        , m_fenced(s.pg_conninfo + " options='-c pg_lease.epoch=" + fence_epoch + "'")
        , m_plain(s.pg_conninfo) {
        create_bare_leases(admin, n.schema, n.ext);
        prepare_lease_statements(m_ext, false, n.ext, n.schema);
        prepare_lease_statements(m_bare, true, n.ext, n.schema);
        m_renew_epoch = acquire_call(m_ext, n.renew_lease, "1 hour");
        release_call(m_ext, n.grant_lease,
                     acquire_call(m_ext, n.grant_lease, "1 hour")); // the row exists, free
        m_bare_renew_epoch =
            admin
                .query(subst("INSERT INTO %S.leases (name, holder, epoch, acquired_at, renewed_at,"
                             " expires_at, ttl, owner_role) VALUES"
                             " ('renew', $1, nextval('%S.epoch_seq'), now(), now(),"
                             "  now() + interval '1 hour', interval '1 hour', current_user),"
                             " ('grant', NULL, nextval('%S.epoch_seq'), now(), now(), now(),"
                             "  interval '1 hour', current_user)"
                             " RETURNING epoch",
                             n.schema),
                       {n.holder})
                .text(0, 0);
        m_fenced.prepare("ins", "INSERT INTO " + n.schema +
                                    ".fenced_0 (payload, epoch) VALUES ($1, NULL)");
        m_plain.prepare("ins", "INSERT INTO " + n.schema +
                                   ".plain (payload, epoch) VALUES ($1, $2::bigint)");
    }

    /// One round: each figure for `seconds`, pg_lease's call and its
    /// reference alternating, which one first changing call by call.
    void round(int round_no, double seconds, commit_mode mode, figure_latencies& out) {
        for (const figure f : {renew, grant, fence}) {
            std::array<std::array<std::vector<double>, 2>, figure_count> got;
            const auto deadline = steady::now() + std::chrono::duration_cast<steady::duration>(
                                                      std::chrono::duration<double>(seconds));
            for (int k = 0; k < max_calls && steady::now() < deadline; ++k)
                for (int i = 0; i < 2; ++i) {
                    const int side = (k + round_no + i) % 2;
                    call(f, side, mode, got);
                }
            std::vector<figure> taken{f};
            if (f == grant && mode == durable)
                taken.push_back(release);
            for (const figure g : taken)
                for (int side = 0; side < 2; ++side) {
                    auto& mine = got[static_cast<std::size_t>(g)][static_cast<std::size_t>(side)];
                    auto& to = out[static_cast<std::size_t>(g)];
                    to.round_p50[static_cast<std::size_t>(side)].push_back(median(mine));
                    auto& all = to.all[static_cast<std::size_t>(side)];
                    all.insert(all.end(), mine.begin(), mine.end());
                }
        }
    }

private:
    static constexpr int max_calls = 100000; ///< per figure and round, besides the deadline

    std::string acquire_call(pg_session& db, const std::string& lease, const char* ttl) {
        pg_result r = db.run("acq", {lease, m_names.holder, ttl});
        if (r.rows() != 1 || r.text(0, 0) != "t")
            throw std::runtime_error("growth: acquire of free lease " + lease + " was refused");
        return r.text(0, 1);
    }

    void release_call(pg_session& db, const std::string& lease, const std::string& epoch) {
        pg_result r = db.run("rel", {lease, m_names.holder, epoch});
        if (r.rows() != 1 || r.text(0, 0) != "t")
            throw std::runtime_error("growth: release of " + lease + " failed");
    }

    /// The same statement in a transaction that is rolled back, in one round trip.
    static double rolled_back_us(pg_session& db, const std::string& name,
                                 std::vector<std::string> params) {
        return timed_us([&] {
            db.pipeline({{"", "BEGIN", {}}, {name, "", std::move(params)}, {"", "ROLLBACK", {}}});
        });
    }

    void call(figure f, int side, commit_mode mode,
              std::array<std::array<std::vector<double>, 2>, figure_count>& got) {
        const auto put = [&](figure g, double us) {
            got[static_cast<std::size_t>(g)][static_cast<std::size_t>(side)].push_back(us);
        };
        pg_session& db = side == 0 ? m_ext : m_bare;
        const std::string& renew_lease = side == 0 ? m_names.renew_lease : bare_renew;
        const std::string& grant_lease = side == 0 ? m_names.grant_lease : bare_grant;
        const std::string& renew_epoch = side == 0 ? m_renew_epoch : m_bare_renew_epoch;
        if (mode == rolled_back) {
            if (f == renew)
                put(f, rolled_back_us(db, "ren", {renew_lease, m_names.holder, renew_epoch}));
            else if (f == grant)
                put(f, rolled_back_us(db, "acq", {grant_lease, m_names.holder, "1 hour"}));
            else if (side == 0)
                put(f, rolled_back_us(m_fenced, "ins", {payload}));
            else
                put(f, rolled_back_us(m_plain, "ins", {payload, m_fence_epoch}));
            return;
        }
        switch (f) {
        case renew:
            put(renew, timed_us([&] {
                    pg_result r = db.run("ren", {renew_lease, m_names.holder, renew_epoch});
                    if (r.rows() != 1 || r.is_null(0, 0))
                        throw std::runtime_error("growth: renew of a held lease failed");
                }));
            break;
        case grant: {
            std::string epoch;
            put(grant, timed_us([&] { epoch = acquire_call(db, grant_lease, "1 hour"); }));
            put(release, timed_us([&] { release_call(db, grant_lease, epoch); }));
            break;
        }
        case fence:
            put(fence, timed_us([&] {
                    if (side == 0)
                        (void)m_fenced.run("ins", {payload});
                    else
                        (void)m_plain.run("ins", {payload, m_fence_epoch});
                }));
            break;
        default:
            break;
        }
    }

    inline static const std::string bare_renew = "renew", bare_grant = "grant";
    inline static const std::string payload = "payload of a typical row, some tens of bytes";
    const names& m_names;
    std::string m_fence_epoch, m_renew_epoch, m_bare_renew_epoch;
    pg_session m_ext, m_bare, m_fenced, m_plain;
};

std::string fmt(double v, int prec = 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    return buf;
}

double paired_ratio(const latencies& l) {
    std::vector<double> ratios;
    for (std::size_t i = 0; i < l.round_p50[0].size() && i < l.round_p50[1].size(); ++i)
        if (l.round_p50[1][i] > 0)
            ratios.push_back(l.round_p50[0][i] / l.round_p50[1][i]);
    return median(ratios);
}

void add_rows(const point& p, commit_mode mode, report& out) {
    for (std::size_t f = 0; f < figure_count; ++f) {
        const latencies& l = p.modes[mode][f];
        if (l.all[0].empty())
            continue; // not measured in this mode
        row r;
        r.section = "growth";
        r.figure = std::string{figure_infos[f].name} + " p50, " + mode_names[mode] + ", " +
                   p.grows + " " + p.size;
        r.clients = 1;
        r.unit = "us";
        r.value = median(l.all[0]);
        r.baseline = median(l.all[1]);
        r.baseline_name = figure_infos[f].reference;
        r.samples = l.round_p50[0];
        r.baseline_samples = l.round_p50[1];
        const double p99 = percentile(l.all[0], 99), base_p99 = percentile(l.all[1], 99);
        r.note = "p99 " + fmt(p99) + " us (reference " + fmt(base_p99) + " us); leases " +
                 std::to_string(p.leases) + " rows, lease_events " + std::to_string(p.events);
        r.extra = {{"p99_us", p99},
                   {"baseline_p99_us", base_p99},
                   {"calls", static_cast<double>(l.all[0].size())},
                   {"leases_rows", static_cast<double>(p.leases)},
                   {"lease_events_rows", static_cast<double>(p.events)}};
        out.add(std::move(r));
    }
}

std::string markdown(const std::vector<point>& points, commit_mode mode, double seconds,
                     const settings& s) {
    std::ostringstream o;
    o << "How cost grows (--only growth), " << mode_names[mode]
      << ": us per call, 1 client; p50 / p99 over " << s.rounds << " rounds of " << fmt(seconds, 2)
      << " s per figure; (x) = median over rounds of p50 / p50 of the reference called "
         "alternately with it (bare UPDATE on a 2-row table; unfenced INSERT).\n\n"
      << "| grows | size | leases rows | lease_events rows | renew p50 / p99 | grant p50 / p99 "
         "| release p50 / p99 | fenced INSERT p50 / p99 | reference p50: renew UPDATE, INSERT |\n"
      << "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const point& p : points) {
        o << "| " << p.grows << " | " << p.size << " | " << p.leases << " | " << p.events;
        for (std::size_t f = 0; f < figure_count; ++f) {
            const latencies& l = p.modes[mode][f];
            if (l.all[0].empty()) {
                o << " | -";
                continue;
            }
            o << " | " << fmt(median(l.all[0])) << " / " << fmt(percentile(l.all[0], 99)) << " ("
              << fmt(paired_ratio(l), 2) << "x)";
        }
        o << " | " << fmt(median(p.modes[mode][renew].all[1])) << ", "
          << fmt(median(p.modes[mode][fence].all[1])) << " |\n";
    }
    return o.str();
}

} // namespace

void run_growth(const settings& s, report& out) {
    pg_session admin{s.pg_conninfo};
    if (admin.query("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").text(0, 0) !=
        "t") {
        log("growth: skipped, it needs a superuser (it fills the extension's tables directly)");
        return;
    }
    const auto start = steady::now();
    const names n = growth::make_names(s, admin);
    int max_fenced = 1;
    for (const int t : s.growth_fenced)
        max_fenced = std::max(max_fenced, t);
    std::int64_t max_events = 0;
    for (const int e : s.growth_events)
        max_events = std::max<std::int64_t>(max_events, e);
    server_state state{admin, n, max_fenced};
    pg_result g =
        admin.query("SELECT acquired, epoch FROM " + n.ext + "lease_acquire($1, $2, '1 hour')",
                    {n.fence_lease, n.holder});
    if (g.text(0, 0) != "t")
        throw std::runtime_error("growth: cannot acquire the fence lease " + n.fence_lease);
    probes probe{s, admin, n, g.text(0, 1)};

    // Both modes share the phase length a figure has in the other sections.
    const double seconds = s.seconds / mode_count;
    std::vector<point> points;
    const auto measure = [&](std::string grows, std::string size) {
        point p;
        p.grows = std::move(grows);
        p.size = std::move(size);
        p.leases = state.leases();
        p.events = state.events();
        for (int round = 0; round < s.rounds; ++round)
            for (int k = 0; k < mode_count; ++k) {
                const auto mode = static_cast<commit_mode>((round + k) % mode_count);
                probe.round(round, seconds, mode, p.modes[mode]);
            }
        for (const commit_mode mode : {durable, rolled_back}) {
            const figure_latencies& f = p.modes[mode];
            log("growth: " + p.grows + " " + p.size + ", " + mode_names[mode] + ": renew p50 " +
                fmt(median(f[renew].all[0])) + " us (x" + fmt(paired_ratio(f[renew]), 2) +
                "), grant " + fmt(median(f[grant].all[0])) + " us (x" +
                fmt(paired_ratio(f[grant]), 2) + "), fence x" + fmt(paired_ratio(f[fence]), 2));
            add_rows(p, mode, out);
        }
        points.push_back(std::move(p));
    };
    // Fenced tables first, while leases and lease_events are small.
    for (const int t : s.growth_fenced) {
        if (t <= 1) {
            state.fence(1, true);
            measure("fenced tables", "1");
            continue;
        }
        state.fence(t, true);
        measure("fenced tables", std::to_string(t) + ", one lease");
        state.fence(t, false);
        measure("fenced tables", std::to_string(t) + ", " + std::to_string(t) + " leases");
    }
    state.drop_fence_leases();
    for (const int l : s.growth_leases) {
        state.fill_leases(l);
        measure("leases", std::to_string(l));
    }
    for (const int e : s.growth_events) {
        state.fill_events(e, max_events);
        measure("lease_events", std::to_string(e));
    }
    const double total = std::chrono::duration<double>(steady::now() - start).count();
    log("growth: section took " + fmt(total) + " s, filling " + fmt(state.fill_seconds()) + " s");
    for (const commit_mode mode : {durable, rolled_back})
        out.add_text(markdown(points, mode, seconds, s));
    out.add_text("growth: the section took " + fmt(total) + " s, of which filling the tables " +
                 fmt(state.fill_seconds()) + " s.\n");
}

} // namespace bench
