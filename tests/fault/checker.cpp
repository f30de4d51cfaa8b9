/// @file checker.cpp
/// @brief The history checker.
///
/// Order of writes and grants: every fenced table has a deferred
/// constraint trigger that takes nextval('fault_order') at COMMIT of the
/// write (while the fence's share lock on the lease row is still held), and
/// lease_events has an AFTER INSERT trigger that takes nextval of the same
/// sequence for every grant/release/revoke (while the lease row is locked
/// for update). A fenced write and a grant of the same lease hold
/// conflicting locks from the value's draw until commit, so between them
/// the sequence order is the commit order.
#include "checker.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>

namespace fault {

using nlohmann::json;

void read_database(const std::string& conninfo, const std::vector<std::string>& leases,
                   std::vector<db_event>& events, std::vector<db_write>& writes) {
    pqxx::connection conn{conninfo};
    pqxx::read_transaction tx{conn};
    for (const auto& row :
         tx.exec("SELECT e.id, e.event, e.name, coalesce(e.holder, ''), e.epoch, "
                 "coalesce(g.ord, -1) FROM lease_events e LEFT JOIN grant_order g "
                 "ON g.event_id = e.id ORDER BY e.id")) {
        db_event e;
        e.id = row[0].as<std::int64_t>();
        e.event = row[1].as<std::string>();
        e.lease = row[2].as<std::string>();
        e.holder = row[3].as<std::string>();
        e.epoch = row[4].as<std::int64_t>();
        e.ord = row[5].as<std::int64_t>();
        events.push_back(e);
    }
    for (const auto& lease : leases) {
        const std::string table = "fw_" + lease;
        for (const auto& row :
             tx.exec("SELECT w.worker, w.seq, w.epoch, coalesce(c.ord, -1) FROM " + table +
                     " w LEFT JOIN commit_order c ON c.tbl = " + tx.quote(table) +
                     " AND c.write_id = w.id")) {
            db_write w;
            w.lease = lease;
            w.worker = row[0].as<std::string>();
            w.seq = row[1].as<std::int64_t>();
            w.epoch = row[2].as<std::int64_t>();
            w.ord = row[3].as<std::int64_t>();
            writes.push_back(w);
        }
    }
}

namespace {

struct belief {
    std::string identity, lease;
    std::int64_t epoch = 0;
    std::int64_t start_send = 0, start_reply = 0, end = 0;
};

class checker {
public:
    checker(const std::string& phase, const std::vector<json>& history,
            const std::vector<fault_record>& faults, int ttl_ms, int retry_ms,
            const phase_expectations& expect)
        : m_phase{phase}
        , m_history{history}
        , m_faults{faults}
        , m_ttl{static_cast<std::int64_t>(ttl_ms) * 1000000}
        , m_margin{std::min<std::int64_t>(m_ttl / 10, 1000000000)}
        , m_retry{static_cast<std::int64_t>(retry_ms) * 1000000}
        , m_expect{expect} {
        std::sort(m_faults.begin(), m_faults.end(),
                  [](const fault_record& a, const fault_record& b) { return a.t < b.t; });
        m_t0 = m_history.empty() ? 0 : time_of(m_history.front());
        for (const auto& r : m_history)
            m_t0 = std::min(m_t0, time_of(r));
        for (const auto& f : m_faults) {
            auto& k = m_report.kinds[f.kind];
            ++k.injections;
            if (!f.detail.empty())
                ++k.notes[f.detail];
        }
    }

    phase_report run(const std::vector<db_event>& events, const std::vector<db_write>& writes) {
        check_grants_db(events);
        check_grants_history();
        check_writes(events, writes);
        check_beliefs();
        check_liveness();
        return std::move(m_report);
    }

private:
    static std::int64_t time_of(const json& r) {
        if (r.contains("t0"))
            return r["t0"].get<std::int64_t>();
        return r.value("t", std::int64_t{0});
    }

    /// The fault kind in effect on @p lease at @p t.
    kind_stats& at(const std::string& lease, std::int64_t t) {
        const fault_record* last = nullptr;
        for (const auto& f : m_faults) {
            if (f.t > t)
                break;
            if (f.lease.empty() || f.lease == lease)
                last = &f;
        }
        return m_report.kinds[last ? last->kind : "baseline"];
    }

    std::string ms(std::int64_t t) const {
        std::ostringstream o;
        o << std::fixed << std::setprecision(1) << static_cast<double>(t - m_t0) / 1e6;
        return o.str();
    }

    /// The history of @p lease in [from, to], one line per record.
    std::string around(const std::string& lease, std::int64_t from, std::int64_t to,
                       const std::set<std::string>& who) const {
        std::vector<const json*> sel;
        for (const auto& r : m_history) {
            const auto t = time_of(r);
            if (r.value("L", std::string{}) != lease || t < from || t > to)
                continue;
            // With many contenders: the processes involved, and every grant.
            const std::string w = r.value("w", std::string{});
            const bool is_grant = r.value("op", "") == "acq" && r.value("r", "") == "ok";
            if (who.empty() || is_grant || who.count(w) || who.count(w.substr(0, w.find('.'))))
                sel.push_back(&r);
        }
        std::sort(sel.begin(), sel.end(),
                  [](const json* a, const json* b) { return time_of(*a) < time_of(*b); });
        std::ostringstream o;
        o << "    history of lease " << lease << " (ms since phase start; t0 = sent, t = reply):\n";
        for (const auto& f : m_faults)
            if (f.t >= from && f.t <= to && (f.lease.empty() || f.lease == lease) &&
                f.detail != "random release")
                o << "      t=" << ms(f.t) << " NEMESIS " << f.kind << " " << f.detail << "\n";
        const std::size_t limit = 60;
        const std::size_t skip = sel.size() > limit ? sel.size() - limit : 0;
        if (skip)
            o << "      ... " << skip << " earlier records\n";
        for (std::size_t i = skip; i < sel.size(); ++i) {
            const json& r = *sel[i];
            o << "      ";
            if (r.contains("t0"))
                o << "t0=" << ms(r["t0"].get<std::int64_t>()) << " ";
            if (r.contains("t"))
                o << "t=" << ms(r["t"].get<std::int64_t>()) << " ";
            o << r.value("w", std::string{}) << " " << r.value("op", std::string{}) << " "
              << r.value("ph", r.value("r", std::string{}))
              << " e=" << r.value("e", std::int64_t{0});
            if (r.contains("s"))
                o << " s=" << r["s"].get<std::int64_t>();
            if (r.contains("x"))
                o << " (" << r["x"].get<std::string>().substr(0, 80) << ")";
            o << "\n";
        }
        return o.str();
    }

    void violation(const std::string& what, const std::string& lease, std::int64_t t,
                   const std::set<std::string>& who = {}) {
        if (m_report.violations.size() >= 10)
            return; // the first ones carry the story
        std::string text = "[" + m_phase + "] " + what + "\n";
        if (t > 0)
            text += around(lease, t - 2 * m_ttl, t + m_ttl, who);
        m_report.violations.push_back(text);
    }

    // I1 on the database: per lease, grants in commit (id) order have
    // strictly increasing epochs; no epoch is granted twice at all.
    void check_grants_db(const std::vector<db_event>& events) {
        std::map<std::string, std::int64_t> last;
        std::map<std::int64_t, const db_event*> seen;
        for (const auto& e : events) {
            if (e.event != "acquired" && e.event != "takeover")
                continue;
            const std::int64_t t = grant_time(e.holder, e.epoch);
            if (auto it = last.find(e.lease); it != last.end() && e.epoch <= it->second) {
                ++at(e.lease, t).reissued;
                violation("I1: lease_events id " + std::to_string(e.id) + " grants epoch " +
                              std::to_string(e.epoch) + " of " + e.lease + " after epoch " +
                              std::to_string(it->second),
                          e.lease, t);
            }
            last[e.lease] = std::max(last[e.lease], e.epoch);
            if (auto [it, fresh] = seen.emplace(e.epoch, &e); !fresh) {
                ++at(e.lease, t).reissued;
                violation("I1: epoch " + std::to_string(e.epoch) + " granted twice (events " +
                              std::to_string(it->second->id) + " and " + std::to_string(e.id) + ")",
                          e.lease, t);
            }
        }
    }

    std::int64_t grant_time(const std::string& identity, std::int64_t epoch) {
        if (m_grant_times.empty())
            for (const auto& r : m_history)
                if (r.value("op", "") == "acq" && r.value("r", "") == "ok")
                    m_grant_times.emplace(
                        std::make_pair(r["w"].get<std::string>(), r["e"].get<std::int64_t>()),
                        r["t"].get<std::int64_t>());
        auto it = m_grant_times.find({identity, epoch});
        return it == m_grant_times.end() ? 0 : it->second;
    }

    struct grant {
        std::string identity, lease;
        std::int64_t epoch, t0, t;
    };

    // I1 on the histories: no epoch acknowledged to two identities; and in
    // real time, a grant whose request was sent after another grant's reply
    // arrived carries a larger epoch (this catches reissue across an
    // asynchronous failover, where lease_events lost the old grants).
    void check_grants_history() {
        std::map<std::pair<std::string, std::int64_t>, grant> first;
        for (const auto& r : m_history) {
            if (r.value("op", "") != "acq" || r.value("r", "") != "ok")
                continue;
            grant g{r["w"], r["L"], r["e"], r["t0"], r["t"]};
            auto key = std::make_pair(g.identity, g.epoch);
            auto it = first.find(key);
            if (it == first.end() || g.t < it->second.t)
                first[key] = g;
        }
        std::map<std::int64_t, const grant*> by_epoch;
        std::vector<const grant*> grants;
        for (const auto& [key, g] : first) {
            grants.push_back(&g);
            if (auto [it, fresh] = by_epoch.emplace(g.epoch, &g); !fresh) {
                ++at(g.lease, g.t).reissued;
                violation("I1: epoch " + std::to_string(g.epoch) + " acknowledged to " +
                              it->second->identity + " and to " + g.identity,
                          g.lease, g.t);
            }
        }
        std::map<std::string, std::vector<const grant*>> per_lease;
        for (const auto* g : grants)
            per_lease[g->lease].push_back(g);
        for (auto& [lease, gs] : per_lease) {
            auto by_reply = gs;
            std::sort(by_reply.begin(), by_reply.end(),
                      [](const grant* a, const grant* b) { return a->t < b->t; });
            auto by_send = gs;
            std::sort(by_send.begin(), by_send.end(),
                      [](const grant* a, const grant* b) { return a->t0 < b->t0; });
            std::size_t i = 0;
            const grant* max_before = nullptr;
            for (const grant* g : by_send) {
                while (i < by_reply.size() && by_reply[i]->t < g->t0) {
                    if (!max_before || by_reply[i]->epoch > max_before->epoch)
                        max_before = by_reply[i];
                    ++i;
                }
                if (max_before && max_before->epoch >= g->epoch) {
                    ++at(lease, g->t).reissued;
                    violation("I1: " + g->identity + " was granted epoch " +
                                  std::to_string(g->epoch) + " by a request sent after " +
                                  max_before->identity + " had been granted epoch " +
                                  std::to_string(max_before->epoch),
                              lease, g->t);
                }
            }
        }
    }

    // I2 and I3.
    void check_writes(const std::vector<db_event>& events, const std::vector<db_write>& writes) {
        std::map<std::string, std::vector<const db_event*>> per_lease;
        for (const auto& e : events)
            per_lease[e.lease].push_back(&e);
        for (auto& [lease, es] : per_lease)
            std::sort(es.begin(), es.end(),
                      [](const db_event* a, const db_event* b) { return a->ord < b->ord; });

        // The workers' view of each write: invoke time and outcome.
        std::map<std::pair<std::string, std::int64_t>, const json*> outcome, invoked;
        for (const auto& r : m_history) {
            if (r.value("op", "") != "write")
                continue;
            auto key = std::make_pair(r["w"].get<std::string>(), r["s"].get<std::int64_t>());
            if (r.value("ph", "") == "inv")
                invoked[key] = &r;
            else
                outcome[key] = &r;
        }
        std::set<std::pair<std::string, std::int64_t>> present;
        for (const auto& w : writes) {
            present.emplace(w.worker, w.seq);
            std::int64_t t = 0;
            if (auto it = invoked.find({w.worker, w.seq}); it != invoked.end())
                t = (*it->second)["t"].get<std::int64_t>();
            // The lease's state at the write's commit: the last event before it.
            const auto& es = per_lease[w.lease];
            std::int64_t current = 0;
            bool freed = false;
            for (const db_event* e : es) {
                if (e->ord >= w.ord)
                    break;
                if (e->event == "acquired" || e->event == "takeover") {
                    current = e->epoch;
                    freed = false;
                } else if (e->epoch == current) {
                    freed = true;
                }
            }
            if (w.ord < 0 || current != w.epoch || freed) {
                ++at(w.lease, t).stale_accepted;
                violation("I2: write " + w.worker + "#" + std::to_string(w.seq) + " with epoch " +
                              std::to_string(w.epoch) + " committed (order " +
                              std::to_string(w.ord) + ") when the grant of record was " +
                              std::to_string(current) + (freed ? " (released)" : ""),
                          w.lease, t);
            }
        }
        for (const auto& [key, r] : outcome) {
            const std::string res = r->value("r", "");
            const std::string lease = r->value("L", "");
            // Attributed when the outcome was seen (a write cut by a fault
            // began before it).
            const std::int64_t t = r->value("t", (*r)["t0"].get<std::int64_t>());
            const bool in_db = present.count(key) != 0;
            if (res == "ref")
                ++at(lease, t).stale_refused;
            if (res == "unk")
                ++at(lease, t).unknown;
            if (res == "ok" && !in_db) {
                ++at(lease, t).acked_lost;
                if (!m_expect.lost_acks_allowed)
                    violation("I3: acknowledged write " + key.first + "#" +
                                  std::to_string(key.second) + " is missing",
                              lease, t);
            }
            if ((res == "ref" || res == "fail") && in_db) {
                ++at(lease, t).refused_present;
                violation("I3: write " + key.first + "#" + std::to_string(key.second) + " was " +
                              (res == "ref" ? "refused" : "failed") + " but is present",
                          lease, t);
            }
        }
    }

    // I4: per identity, the intervals in which the library believed it held
    // the lease: from a successful acquire (its reply; strictly, its send
    // time) to send time + ttl - margin, extended by successful renewals,
    // cut by a refused renew, a release, a fence rejection, a refused acquire.
    void check_beliefs() {
        std::map<std::string, std::vector<const json*>> per_identity;
        for (const auto& r : m_history) {
            const std::string op = r.value("op", "");
            if (op == "acq" || op == "renew" || op == "rel" || op == "lost")
                per_identity[r.value("w", "")].push_back(&r);
        }
        std::vector<belief> beliefs;
        for (auto& [id, rs] : per_identity) {
            std::sort(rs.begin(), rs.end(), [](const json* a, const json* b) {
                return a->value("t", std::int64_t{0}) < b->value("t", std::int64_t{0});
            });
            std::optional<belief> cur;
            auto close = [&](std::int64_t t) {
                if (cur) {
                    cur->end = std::min(cur->end, t);
                    beliefs.push_back(*cur);
                    cur.reset();
                }
            };
            for (const json* r : rs) {
                const std::string op = (*r)["op"], res = r->value("r", "");
                const std::int64_t t = (*r)["t"];
                const std::int64_t t0 = r->value("t0", t);
                const std::int64_t e = r->value("e", std::int64_t{0});
                if (cur && t0 >= cur->end)
                    close(cur->end); // the local deadline passed first
                if ((op == "acq" || op == "renew") && res == "ok") {
                    if (cur && cur->epoch != e)
                        close(t0);
                    if (!cur)
                        cur = belief{id, (*r)["L"], e, t0, t, t0 + m_ttl - m_margin};
                    cur->end = std::max(cur->end, t0 + m_ttl - m_margin);
                } else if (op == "rel") {
                    close(t0);
                } else if (res == "no" || op == "lost") {
                    close(t);
                }
            }
            if (cur)
                close(cur->end);
        }
        std::map<std::string, std::vector<belief*>> per_lease;
        for (auto& b : beliefs)
            per_lease[b.lease].push_back(&b);
        for (auto& [lease, bs] : per_lease) {
            for (int strict = 0; strict < 2; ++strict) {
                auto start = [strict](const belief* b) {
                    return strict ? b->start_send : b->start_reply;
                };
                std::sort(bs.begin(), bs.end(),
                          [&](const belief* a, const belief* b) { return start(a) < start(b); });
                const belief* reach = nullptr; // the interval reaching furthest so far
                for (const belief* b : bs) {
                    if (reach && reach->identity != b->identity && start(b) < reach->end) {
                        auto& k = at(lease, start(b));
                        if (strict) {
                            ++k.overlaps_send;
                        } else {
                            ++k.overlaps;
                            if (!m_expect.overlaps_allowed)
                                violation("I4: " + b->identity + " believed it held " + lease +
                                              " (epoch " + std::to_string(b->epoch) + ") from " +
                                              ms(start(b)) + " ms while " + reach->identity +
                                              " believed it held epoch " +
                                              std::to_string(reach->epoch) + " until " +
                                              ms(reach->end) + " ms",
                                          lease, start(b), {b->identity, reach->identity});
                        }
                    }
                    if (!reach || b->end > reach->end)
                        reach = b;
                }
            }
        }
    }

    // Liveness: after each fault, the time until a lease operation sent
    // after the fault succeeded (a grant, or the leader's renewal).
    void check_liveness() {
        std::vector<std::pair<std::int64_t, const json*>> ok;
        for (const auto& r : m_history) {
            const std::string op = r.value("op", "");
            if ((op == "acq" || op == "renew") && r.value("r", "") == "ok")
                ok.emplace_back(r["t0"].get<std::int64_t>(), &r);
        }
        std::sort(ok.begin(), ok.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
        const std::int64_t window = 20 * m_ttl + 30000000000LL;
        std::int64_t last = 0;
        for (const auto& r : m_history)
            last = std::max(last, r.value("t", std::int64_t{0}));
        for (const auto& f : m_faults) {
            auto& k = m_report.kinds[f.kind];
            if (f.t > last - 2 * m_ttl)
                continue; // the workers were stopped before anyone could take over
            std::int64_t best = -1;
            auto it = std::lower_bound(ok.begin(), ok.end(), f.t,
                                       [](const auto& a, std::int64_t t) { return a.first < t; });
            for (int seen = 0; it != ok.end() && it->first < f.t + window && seen < 64; ++it) {
                const json& r = *it->second;
                if (!f.lease.empty() && r.value("L", "") != f.lease)
                    continue;
                ++seen;
                const std::int64_t d = r["t"].get<std::int64_t>() - f.t;
                if (best < 0 || d < best)
                    best = d;
            }
            if (best < 0)
                ++k.no_recovery;
            else
                k.recovery_ms.push_back(static_cast<double>(best) / 1e6);
        }
    }

    std::string m_phase;
    const std::vector<json>& m_history;
    std::vector<fault_record> m_faults;
    std::int64_t m_ttl, m_margin, m_retry, m_t0 = 0;
    phase_expectations m_expect;
    phase_report m_report;
    std::map<std::pair<std::string, std::int64_t>, std::int64_t> m_grant_times;
};

} // namespace

phase_report check_phase(const std::string& phase, const std::vector<json>& history,
                         const std::vector<db_event>& events, const std::vector<db_write>& writes,
                         const std::vector<fault_record>& faults, int ttl_ms, int retry_ms,
                         const phase_expectations& expect) {
    return checker{phase, history, faults, ttl_ms, retry_ms, expect}.run(events, writes);
}

} // namespace fault
