/// @file fence.cpp
/// @brief lease_use() and the mapping of fenced-transaction failures.
///
/// fence/: the application's fenced transactions (run_fenced): the token
/// declared in the transaction (lease_use or SET LOCAL pg_lease.epoch),
/// the deadline that cancels a transaction outliving its lease, and the
/// mapping of the server's refusals to pglease's errors.
#include "pglease/internal/fenced_scope.hpp"

#include "pq/pqxx_sqlstate.hpp"

#include <pqxx/except>

#include <string_view>
#include <utility>

namespace pglease::detail {

void declare_token(pqxx::transaction_base& tx, const fence_token& token) {
    std::string fn = "lease_use";
    if (!token.schema.empty())
        fn = tx.conn().quote_name(token.schema) + "." + fn;
    pqxx_compat::exec_params(tx, "SELECT " + fn + "($1, $2)", token.lease_name, token.epoch);
}

void rethrow_fenced(std::exception_ptr ep, bool committing) {
    try {
        std::rethrow_exception(std::move(ep));
    } catch (const error&) {
        throw;
    } catch (const pqxx::in_doubt_error& e) {
        throw commit_unknown{std::string{"commit outcome unknown: "} + e.what()};
    } catch (const pqxx::broken_connection& e) {
        if (committing)
            throw commit_unknown{std::string{"connection lost during commit: "} + e.what()};
        throw connection_lost{std::string{"connection lost in fenced transaction: "} + e.what()};
    } catch (const pqxx::failure& e) {
        const std::string sqlstate = sqlstate_of(e);
        if (committing && is_connection_sqlstate(sqlstate))
            throw commit_unknown{std::string{"connection lost during commit: "} + e.what(),
                                 sqlstate};
        throw_for_sqlstate(e.what(), sqlstate);
    }
}

void check_replicated(const pqxx_compat::notice_watch& watch) {
    if (watch.seen())
        throw commit_unknown{"commit outcome unknown: the server committed locally after "
                             "cancelling its wait for the synchronous standby; a failover may "
                             "lose the transaction"};
}

bool is_eviction(const error& e) noexcept {
    return dynamic_cast<const connection_lost*>(&e) != nullptr || e.sqlstate() == "57014";
}

void throw_evicted(const error& e, const fence_token& token) {
    throw lease_evicted{"fenced transaction of lease \"" + token.lease_name + "\" (epoch " +
                            std::to_string(token.epoch) +
                            ") was ended after the lease ran out (by a takeover, or at "
                            "run_fenced's deadline): " +
                            e.what(),
                        e.sqlstate()};
}

} // namespace pglease::detail
