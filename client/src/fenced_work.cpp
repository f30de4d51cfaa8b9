/// @file fenced_work.cpp
/// @brief BEGIN and lease_use() in one simple query.
#include "pglease/fenced_work.hpp"

#include "pq_handle.hpp"

#include <exception>

namespace pglease {
namespace {

/// `BEGIN; SELECT [schema.]lease_use('name', epoch)`, quoted for @p conn.
std::string begin_query(pqxx::connection_base& conn, const fence_token& token) {
    std::string fn = "lease_use";
    if (!token.schema.empty())
        fn = conn.quote_name(token.schema) + "." + fn;
    return "BEGIN; SELECT " + fn + "(" + conn.quote(token.lease_name) + "::text, " +
           std::to_string(token.epoch) + "::bigint)";
}

} // namespace

fenced_work::fenced_work(pqxx::connection_base& conn, const fence_token& token)
    : pqxx::internal::namedclass{"fenced_work", "pglease_fenced"}
    , pqxx::internal::basic_transaction{conn, pqxx::isolation_traits<pqxx::read_committed>::name(),
                                        pqxx::read_write}
    , m_epoch{token.epoch}
    , m_begin{begin_query(conn, token)} {
    Begin();
}

fenced_work::~fenced_work() noexcept {
    End();
}

void fenced_work::do_begin() {
    try {
        // No retry on a broken connection (pqxx::work's BEGIN retries): the
        // caller's deadline watches this socket, which a reconnect replaces.
        direct_exec(m_begin.c_str());
    } catch (const std::exception&) {
        // A statement after BEGIN failed: the session is left in an aborted
        // transaction block, which Begin() does not roll back (this
        // transaction never became active). Roll it back here, so the next
        // transaction on the connection starts clean.
        if (conn().is_open() && detail::in_transaction_block(*this)) {
            try {
                direct_exec("ROLLBACK");
            } catch (const std::exception&) {
                // The connection broke meanwhile: the session is gone anyway.
            }
        }
        throw;
    }
}

} // namespace pglease
