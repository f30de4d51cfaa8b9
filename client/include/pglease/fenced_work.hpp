/// @file fenced_work.hpp
/// @brief fenced_work: a pqxx transaction whose BEGIN already carries the
/// fencing token, in the same round trip.
#pragma once

#include "pglease/fence_token.hpp"

#include <pqxx/transaction>

#include <array>
#include <cstdint>

namespace pglease {

/// A read-committed pqxx transaction (like pqxx::work) that declares its
/// fencing token before any statement of yours: its first query is
/// `BEGIN; SET LOCAL pg_lease.epoch = '<epoch>'`, sent as one simple query,
/// so fencing costs no round trip of its own (BEGIN, your statements,
/// COMMIT: as many as a plain pqxx::work), and on the server a utility
/// statement rather than the planned SELECT and SECURITY DEFINER call of
/// lease_use().
///
/// The fence takes a transaction's token from lease_use(), or else from
/// pg_lease.epoch; epochs are unique across leases, so the one epoch set
/// here passes only on the tables of its own lease, and only while it is
/// that lease's current, unexpired grant. SET LOCAL ends with the
/// transaction (commit or rollback): it never outlives it, so it is safe
/// behind a transaction-pooling pgbouncer and after reconnects, and a
/// pg_lease.epoch of the session's own is back once the transaction ends.
/// Inside it, that session value is hidden: a write to a table of another
/// lease needs that lease's `lease_use(name, epoch)` (which takes
/// precedence), or it is refused as a stale epoch (LS001). The lease name
/// is not sent; it is checked here as lease_use() checked it (1..255
/// bytes), and the epoch must be positive (invalid_argument, before any
/// I/O). Use it through run_fenced(), whose callable may take a
/// fenced_work&, a pqxx::dbtransaction&, a pqxx::transaction_base& or
/// auto&:
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
/// query fails after BEGIN, the constructor rolls the session back before
/// it throws.
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
    /// The combined `BEGIN; SET LOCAL pg_lease.epoch = '<epoch>'`, NUL-terminated: built in
    /// place (no allocation per transaction); room for the longest int64.
    std::array<char, 64> m_begin{};
};

} // namespace pglease
