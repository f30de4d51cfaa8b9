/// @file cmd_primitives.cpp
/// @brief `pglease acquire|renew|release|revoke`: one call each, for scripts.
///
/// primitives/: one SQL call per subcommand, for scripts: `acquire`,
/// `renew`, `release`, `revoke`, `fence`, `unfence`.
#include "commands.hpp"
#include "common/duration.hpp"
#include "common/exit_codes.hpp"
#include "common/over_backend.hpp"
#include "pglease/internal/pqxx_compat.hpp"

#include <pglease/error.hpp>
#include <pglease/lease.hpp>
#include <pglease/pq_backend.hpp>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <iostream>

namespace pglease::cli {
namespace {

/// "pglease: lease "NAME" <what> by IDENTITY with epoch E<tail>".
int not_held(const primitive_args& a, const char* what, const char* tail) {
    std::cerr << "pglease: lease \"" << a.lease << "\" " << what << " by " << a.identity
              << " with epoch " << a.epoch << tail << std::endl;
    return exit_lease_lost;
}

} // namespace

int cmd_acquire(const global_options& g, const primitive_args& a) {
    try {
        pglease::pq_backend db{make_connection_options(g, one_shot_call_timeout)};
        pglease::lease_options o;
        o.identity = a.identity;
        o.ttl = a.ttl;
        o.lock_delay = a.lock_delay;
        pglease::lease l{db, a.lease, o};
        const bool ok = a.wait.count() > 0 ? l.acquire_for(a.wait) : l.acquire();
        if (ok && !l.held()) // the wait itself took longer than the grant is good for
            throw pglease::lease_lost{"lease \"" + a.lease +
                                      "\" was acquired but its local deadline passed at once"};
        const auto now = std::chrono::steady_clock::now();
        std::optional<std::chrono::milliseconds> left;
        if (ok)
            left = std::chrono::duration_cast<std::chrono::milliseconds>(l.deadline() - now);
        else if (const auto hint = l.expiry_hint())
            left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(*hint - now),
                            std::chrono::milliseconds{0});
        if (a.json) {
            nlohmann::ordered_json j;
            j["acquired"] = ok;
            j["name"] = a.lease;
            j["holder"] = l.holder().empty() ? nlohmann::ordered_json(nullptr)
                                             : nlohmann::ordered_json(l.holder());
            j["epoch"] = ok ? nlohmann::ordered_json(l.epoch()) : nlohmann::ordered_json(nullptr);
            j["remaining_ms"] =
                left ? nlohmann::ordered_json(left->count()) : nlohmann::ordered_json(nullptr);
            std::cout << j.dump() << std::endl;
        } else if (ok) {
            std::cout << l.epoch() << std::endl;
        }
        if (ok)
            return exit_ok;
        std::string msg = "lease \"" + a.lease + "\" is held by " +
                          (l.holder().empty() ? "another holder" : l.holder());
        if (left)
            msg += " (expires in " + format_duration(*left) + ")";
        std::cerr << "pglease: " << msg << std::endl;
        return exit_held;
    } catch (const std::exception& e) {
        return report_error(e);
    }
}

int cmd_renew(const global_options& g, const primitive_args& a) {
    try {
        // Straight SQL so that without --ttl the lease keeps its own ttl (NULL).
        pqxx::connection conn{plain_conninfo(g)};
        pqxx::nontransaction tx{conn};
        const std::string sql =
            "SELECT " + qualified(g, "lease_renew") + "($1, $2, $3, $4::interval)";
        pqxx::row row;
        try {
            if (a.ttl_given)
                row = pqxx_compat::exec_params1(tx, sql, a.lease, a.identity, a.epoch,
                                                std::to_string(a.ttl_given->count()) +
                                                    " milliseconds");
            else
                row = pqxx_compat::exec_params1(tx, sql, a.lease, a.identity, a.epoch, nullptr);
        } catch (const pqxx::sql_error& e) {
            pglease::throw_for_sqlstate(e.what(), std::string{e.sqlstate()});
        }
        if (row[0].is_null())
            return not_held(a, "is not held", " (released, revoked, expired or taken over)");
        return exit_ok;
    } catch (const std::exception& e) {
        return report_error(e);
    }
}

int cmd_release(const global_options& g, const primitive_args& a) {
    return over_backend(g, [&](pglease::pq_backend& db) {
        return db.release(a.lease, a.identity, a.epoch)
                   ? exit_ok
                   : not_held(a, "was not held", "; nothing released");
    });
}

int cmd_revoke(const global_options& g, const primitive_args& a) {
    return over_backend(g, [&](pglease::pq_backend& db) {
        if (!db.revoke(a.lease))
            info(g, "lease \"" + a.lease + "\" was not held; nothing to revoke");
        return exit_ok;
    });
}

} // namespace pglease::cli
