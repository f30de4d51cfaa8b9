/// @file fenced_work.hpp
/// @brief fenced_work: a pqxx transaction whose BEGIN already carries the
/// fencing token, in the same round trip.
#pragma once

#include "pglease/fence_token.hpp"

#include <pqxx/transaction>

#include <string>

namespace pglease {

/// A read-committed pqxx transaction (like pqxx::work) that declares its
/// fencing token before any statement of yours: its first query is
/// `BEGIN; SELECT lease_use('<name>', <epoch>)`, sent as one simple query,
/// so fencing costs no round trip of its own (BEGIN, your statements,
/// COMMIT: as many as a plain pqxx::work).
///
/// The token is transaction-scoped (lease_use), never a session setting:
/// it is safe behind a transaction-pooling pgbouncer and after reconnects.
/// Use it through run_fenced(), whose callable may take a fenced_work&, a
/// pqxx::dbtransaction&, a pqxx::transaction_base& or auto&:
///
/// @code
///   elector.run_fenced(conn, [](pqxx::transaction_base& tx) {
///       tx.exec0("UPDATE jobs SET state = 'done' WHERE id = 7");
///   });
/// @endcode
///
/// Constructing it sends the BEGIN; like any pqxx transaction it rolls back
/// unless commit() was called. Unlike pqxx::work, a connection found broken
/// at BEGIN is not reopened and retried here (run_fenced() does that, under
/// its deadline): the constructor throws pqxx::broken_connection. When the
/// query fails after BEGIN (lease_use refused its arguments), the
/// constructor rolls the session back before it throws.
class fenced_work final : public pqxx::internal::basic_transaction {
public:
    /// Begins the transaction on @p conn with @p token declared.
    fenced_work(pqxx::connection_base& conn, const fence_token& token);
    fenced_work(const fenced_work&) = delete;
    fenced_work& operator=(const fenced_work&) = delete;
    fenced_work(fenced_work&&) = delete;
    fenced_work& operator=(fenced_work&&) = delete;
    ~fenced_work() noexcept override;

    /// The epoch this transaction's writes carry.
    [[nodiscard]] std::int64_t epoch() const noexcept { return m_epoch; }

private:
    void do_begin() override;

    std::int64_t m_epoch;
    std::string m_begin; ///< the combined BEGIN; SELECT lease_use(...)
};

} // namespace pglease
