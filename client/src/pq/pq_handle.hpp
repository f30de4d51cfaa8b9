/// @file pq_handle.hpp
/// @brief Internal: the libpq handle under a libpqxx 6.4 connection, and a
/// cancel request that owns what it uses.
#pragma once

#include <pqxx/connection_base>
#include <pqxx/dbtransaction>

#include <functional>

namespace pglease::detail {

/// The PGconn of @p tx's connection. libpqxx 6.4 has no public accessor;
/// pqxx::largeobject gives its subclasses this one.
[[nodiscard]] pqxx::internal::pq::PGconn* pq_handle(const pqxx::dbtransaction& tx) noexcept;

/// The PGconn of @p conn, which must have no transaction open. Sends
/// nothing: it registers a transaction object that never begins.
[[nodiscard]] pqxx::internal::pq::PGconn* pq_handle(pqxx::connection_base& conn);

/// A function that asks the server to cancel what @p handle's session is
/// running (PQcancel). It copies what it needs now, so it stays valid after
/// the connection is gone: call it from any thread, at any time. Empty when
/// @p handle has no session.
[[nodiscard]] std::function<void()> cancel_request(pqxx::internal::pq::PGconn* handle);

/// True when @p tx's session is inside a transaction block (idle in it,
/// or in a failed one): what a failed "BEGIN; ..." query leaves behind.
[[nodiscard]] bool in_transaction_block(const pqxx::dbtransaction& tx) noexcept;

} // namespace pglease::detail
