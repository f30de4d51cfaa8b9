/// @file fenced_work.cpp
/// @brief The fenced block: BEGIN and SET LOCAL pg_lease.epoch in one
/// simple query, on a pqxx::nontransaction (libpqxx's public API only).
#include "pglease/internal/fenced_work.hpp"

#include "pglease/error.hpp"

#include <pqxx/except>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string_view>

namespace pglease::detail {
namespace {

constexpr std::size_t max_lease_name = 255; // bytes, as the server's lease_use
constexpr const char* invalid_parameter_value = "22023";

/// The checks lease_use() makes on the server, made here: the SET LOCAL
/// form never sends the lease name.
void check_token(const fence_token& token) {
    if (token.lease_name.empty())
        throw invalid_argument{"lease name must not be empty", invalid_parameter_value};
    if (token.lease_name.size() > max_lease_name)
        throw invalid_argument{"lease name must be at most 255 bytes long",
                               invalid_parameter_value};
    if (token.epoch <= 0)
        throw invalid_argument{"epoch must be positive", invalid_parameter_value};
}

/// `BEGIN; SET LOCAL pg_lease.epoch = '<epoch>'`, NUL-terminated, built in
/// place (no allocation per transaction).
///
/// The SPEC's fence takes a transaction's token from lease_use(), or else
/// from pg_lease.epoch; epochs are unique across leases, so the one epoch
/// listed is this lease's token, and only the grant it names passes. SET
/// LOCAL ends with the transaction (COMMIT or ROLLBACK restores the
/// session's own value), so no token outlives it, behind a
/// transaction-pooling pgbouncer too; and it names no function, so
/// neither schema nor search_path matters.
using begin_query = std::array<char, 64>;
begin_query begin_query_of(const fence_token& token) {
    check_token(token);
    begin_query out{};
    constexpr std::string_view head = "BEGIN; SET LOCAL pg_lease.epoch = '";
    // head, 19 digits (a positive int64), the closing quote and the NUL.
    static_assert(std::tuple_size_v<begin_query> >= head.size() + 19 + 2);
    char* p = std::copy(head.begin(), head.end(), out.data());
    p = std::to_chars(p, out.data() + out.size() - 2, token.epoch).ptr;
    *p++ = '\'';
    *p = '\0';
    return out;
}

} // namespace

fenced_block::~fenced_block() {
    rollback();
}

pqxx::nontransaction& fenced_block::begin(const fence_token& token) {
    const begin_query query = begin_query_of(token); // before any I/O
    m_tx.emplace(m_conn, "pglease_fenced");
    // Open from here on: a failure of the SET LOCAL after BEGIN leaves the
    // session in a failed block, which rollback() ends.
    m_open = true;
    m_tx->exec(query.data());
    return *m_tx;
}

void fenced_block::forget() noexcept {
    m_tx.reset();
    m_open = false;
}

void fenced_block::commit() {
    // Ends libpqxx's view of the caller's transaction first; a transaction
    // the caller aborted throws here (pqxx::usage_error), and the block is
    // rolled back.
    m_tx->commit();
    m_tx.reset();
    pqxx::nontransaction end{m_conn, "pglease_commit"};
    m_open = false; // sent now: whatever happens, no ROLLBACK after it
    // A block whose statement failed (its error caught by the caller)
    // answers ROLLBACK; libpqxx keeps that answer private, so it is not
    // seen here, as with pqxx::work's own COMMIT.
    end.exec("COMMIT");
    end.commit();
}

void fenced_block::rollback() noexcept {
    m_tx.reset();
    if (!m_open)
        return;
    m_open = false;
    if (!m_conn.is_open())
        return; // the session and its block are gone
    try {
        pqxx::nontransaction end{m_conn, "pglease_rollback"};
        end.exec("ROLLBACK");
        end.commit();
    } catch (const std::exception&) {
        // The connection broke meanwhile: the server ends the block itself.
    }
}

} // namespace pglease::detail
