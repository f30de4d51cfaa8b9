/// @file fenced_work.hpp
/// @brief The one-round-trip fenced transaction: what run_fenced() gives a
/// callable that takes a pqxx::transaction_base& (or auto&).
#pragma once

#include "pglease/internal/fence_token.hpp"

#include <pqxx/connection>
#include <pqxx/nontransaction>

#include <optional>

namespace pglease {

/// @deprecated Take a pqxx::transaction_base& (or auto&) instead: the
/// callable then gets the same one-round-trip transaction (docs/cpp.md,
/// "libpqxx 7 and 8"). Until pg_lease 1.5 this was a class of its own
/// derived from libpqxx 6's transaction internals, which libpqxx 7 and 8
/// no longer have.
using fenced_work [[deprecated("take pqxx::transaction_base& instead (docs/cpp.md)")]] =
    pqxx::nontransaction;

namespace detail {

/// One fenced transaction block on a connection, built on libpqxx's public
/// API alone (every version from 6.4 to 8.x): a pqxx::nontransaction whose
/// first query is `BEGIN; SET LOCAL pg_lease.epoch = '<epoch>'`, sent as
/// one simple query, so fencing costs no round trip of its own (BEGIN, your
/// statements, COMMIT: as many as a plain pqxx::work), and on the server a
/// utility statement rather than the planned SELECT and SECURITY DEFINER
/// call of lease_use().
///
/// The fence takes a transaction's token from lease_use(), or else from
/// pg_lease.epoch; epochs are unique across leases, so the one epoch set
/// here passes only on the tables of its own lease, and only while it is
/// that lease's current, unexpired grant. SET LOCAL ends with the
/// transaction (commit or rollback): it never outlives it, so it is safe
/// behind a transaction-pooling pgbouncer and after reconnects. The lease
/// name is not sent; it is checked here as lease_use() checks it (1..255
/// bytes), and the epoch must be positive (invalid_argument, before any
/// I/O).
///
/// The block is rolled back when the object goes before commit(): a
/// ROLLBACK through a fresh nontransaction, once the caller's one is gone.
class fenced_block {
public:
    explicit fenced_block(pqxx::connection& conn) noexcept
        : m_conn{conn} {}
    fenced_block(const fenced_block&) = delete;
    fenced_block& operator=(const fenced_block&) = delete;
    fenced_block(fenced_block&&) = delete;
    fenced_block& operator=(fenced_block&&) = delete;
    ~fenced_block();

    /// Sends the BEGIN with @p token declared; the transaction for the
    /// caller's statements.
    pqxx::nontransaction& begin(const fence_token& token);
    /// Forgets a begin() that found the connection broken (nothing to roll
    /// back on a session that is gone).
    void forget() noexcept;
    /// The caller's transaction, as begin() returned it.
    [[nodiscard]] pqxx::nontransaction& tx() { return *m_tx; }
    /// Commits: ends the caller's transaction object (throws when the
    /// caller aborted it) and sends COMMIT. A block whose statement failed
    /// (its error caught by the caller) is rolled back by the server's
    /// COMMIT, silently, as a pqxx::work's is.
    void commit();
    /// Rolls the block back now (see the destructor).
    void rollback() noexcept;

private:
    pqxx::connection& m_conn;
    std::optional<pqxx::nontransaction> m_tx;
    bool m_open = false; ///< BEGIN sent, neither COMMIT nor ROLLBACK yet
};

} // namespace detail
} // namespace pglease
