/// @file fenced_work.cpp
/// @brief BEGIN and SET LOCAL pg_lease.epoch in one simple query.
#include "pglease/fenced_work.hpp"

#include "pglease/error.hpp"
#include "pq/pq_handle.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

namespace pglease {
namespace {

constexpr std::size_t max_lease_name = 255; // bytes, as the server's lease_use
constexpr const char* invalid_parameter_value = "22023";

/// The checks lease_use() made on the server when the BEGIN carried it,
/// made here: the SET LOCAL form never sends the lease name.
void check_token(const fence_token& token) {
    if (token.lease_name.empty())
        throw invalid_argument{"lease name must not be empty", invalid_parameter_value};
    if (token.lease_name.size() > max_lease_name)
        throw invalid_argument{"lease name must be at most 255 bytes long",
                               invalid_parameter_value};
    if (token.epoch <= 0)
        throw invalid_argument{"epoch must be positive", invalid_parameter_value};
}

/// `BEGIN; SET LOCAL pg_lease.epoch = '<epoch>'`.
///
/// The SPEC's fence takes a transaction's token from lease_use(), or else
/// from pg_lease.epoch; epochs are unique across leases, so the one epoch
/// listed is this lease's token, and only the grant it names passes. The
/// setting costs the server a utility statement where lease_use() costs a
/// planned SELECT and a SECURITY DEFINER call. SET LOCAL ends with the
/// transaction (COMMIT or ROLLBACK restores the session's own value), so
/// no token outlives it, behind a transaction-pooling pgbouncer too; and it
/// names no function, so neither schema nor search_path matters.
///
/// Written into @p out (NUL-terminated), without allocating.
template <std::size_t N>
void write_begin_query(const fence_token& token, std::array<char, N>& out) {
    check_token(token);
    constexpr std::string_view head = "BEGIN; SET LOCAL pg_lease.epoch = '";
    // head, 19 digits (a positive int64), the closing quote and the NUL.
    static_assert(N >= head.size() + 19 + 2);
    char* p = std::copy(head.begin(), head.end(), out.data());
    p = std::to_chars(p, out.data() + out.size() - 2, token.epoch).ptr;
    *p++ = '\'';
    *p = '\0';
}

} // namespace

fenced_work::fenced_work(pqxx::connection_base& conn, const fence_token& token)
    : pqxx::internal::namedclass{"fenced_work", "pglease_fenced"}
    , pqxx::internal::basic_transaction{conn, pqxx::isolation_traits<pqxx::read_committed>::name(),
                                        pqxx::read_write}
    , m_epoch{token.epoch} {
    write_begin_query(token, m_begin);
    Begin();
}

fenced_work::~fenced_work() noexcept {
    End();
}

void fenced_work::do_begin() {
    try {
        // No retry on a broken connection (pqxx::work's BEGIN retries): the
        // caller's deadline watches this socket, which a reconnect replaces.
        direct_exec(m_begin.data());
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
