/// @file pq_handle.cpp
/// @brief The libpq handle under libpqxx 6.4, through pqxx::largeobject.
#include "pq/pq_handle.hpp"

#include <pqxx/largeobject>

#include <libpq-fe.h>

#include <array>
#include <memory>

namespace pglease::detail {
namespace {

/// pqxx::largeobject::raw_connection() is protected: this subclass only
/// makes it callable (it is never instantiated).
struct handle_access : pqxx::largeobject {
    static PGconn* of(const pqxx::dbtransaction& tx) noexcept { return raw_connection(tx); }
};

/// A transaction object that never begins: it registers with the
/// connection (so raw_connection() accepts it) and sends nothing.
class probe final : public pqxx::dbtransaction {
public:
    explicit probe(pqxx::connection_base& conn)
        : pqxx::internal::namedclass{"pglease_probe"}
        , pqxx::dbtransaction{conn, true} {}
    probe(const probe&) = delete;
    probe& operator=(const probe&) = delete;
    probe(probe&&) = delete;
    probe& operator=(probe&&) = delete;
    ~probe() noexcept override { End(); }

private:
    void do_commit() override {}
};

} // namespace

PGconn* pq_handle(const pqxx::dbtransaction& tx) noexcept {
    return handle_access::of(tx);
}

PGconn* pq_handle(pqxx::connection_base& conn) {
    const probe p{conn};
    return pq_handle(p);
}

std::function<void()> cancel_request(PGconn* handle) {
    if (handle == nullptr)
        return {};
    std::shared_ptr<PGcancel> cancel{PQgetCancel(handle), PQfreeCancel};
    if (!cancel)
        return {};
    return [cancel] {
        std::array<char, 256> message{};
        (void)PQcancel(cancel.get(), message.data(), static_cast<int>(message.size()));
    };
}

bool in_transaction_block(const pqxx::dbtransaction& tx) noexcept {
    PGconn* handle = pq_handle(tx);
    if (handle == nullptr)
        return false;
    const PGTransactionStatusType status = PQtransactionStatus(handle);
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR;
}

} // namespace pglease::detail
