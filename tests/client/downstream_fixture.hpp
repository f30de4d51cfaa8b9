/// @file downstream_fixture.hpp
/// @brief What the two-cluster downstream tests share: the clusters that
/// tests/client/downstream.sh starts (PGLEASE_STORE, PGLEASE_DOWNSTREAM),
/// fenced tables there, the floor, an elector config with one downstream,
/// and an old leader holding a short grant.
#pragma once

#include "pglease/internal/pqxx_compat.hpp"
#include <pglease/pglease.hpp>
#include <pqxx/pqxx>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

namespace downstream_test {

using namespace std::chrono_literals;

inline std::string env(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr)
        throw std::runtime_error{std::string{name} + " is not set: run tests/client/downstream.sh"};
    return v;
}

inline std::string unique(const char* prefix) {
    return std::string{prefix} + "_" + std::to_string(::getpid()) + "_" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

inline std::string store_id() {
    pqxx::connection c{env("PGLEASE_STORE")};
    pqxx::nontransaction tx{c};
    return pglease::pqxx_compat::exec1(tx, "SELECT lease_store_id()")[0].as<std::string>();
}

/// A table in the downstream database fenced by @p lease of the store.
inline void make_downstream_table(const std::string& table, const std::string& lease) {
    pqxx::connection c{env("PGLEASE_DOWNSTREAM")};
    pqxx::nontransaction tx{c};
    tx.exec("CREATE TABLE " + table + " (id int, epoch bigint)");
    tx.exec("SELECT lease_fence(" + tx.quote(table) + ", " + tx.quote(lease) + ", store => " +
            tx.quote(store_id()) + ")");
}

inline std::int64_t floor_of(const std::string& lease) {
    pqxx::connection c{env("PGLEASE_DOWNSTREAM")};
    pqxx::nontransaction tx{c};
    const auto r = pglease::pqxx_compat::exec_params(
        tx, "SELECT epoch FROM lease_floors WHERE store = $1 AND name = $2", store_id(), lease);
    return r.empty() ? 0 : r[0][0].as<std::int64_t>();
}

/// Waits up to @p timeout for @p pred, checking every 10 ms.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= end)
            return false;
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

inline pglease::elector_config config_for(const std::string& lease, const std::string& downstream) {
    pglease::elector_config c;
    c.lease_name = lease;
    c.ttl = 4s;
    c.renew_deadline = 2500ms;
    c.retry_period = 300ms;
    c.connection.conninfo = env("PGLEASE_STORE");
    pglease::connection_options d;
    d.conninfo = downstream;
    c.downstreams.push_back(d);
    return c;
}

/// The old leader: a grant of @p lease with a 1 s ttl from a session of
/// its own on the store, and its token.
struct old_leader {
    explicit old_leader(const std::string& lease)
        : db{[] {
            pglease::connection_options o;
            o.conninfo = env("PGLEASE_STORE");
            return o;
        }()}
        , grant{db, lease, [] {
                    pglease::lease_options o;
                    o.identity = "old-leader";
                    o.ttl = 1s;
                    return o;
                }()} {}

    /// The token of the grant it holds (acquire it first).
    [[nodiscard]] pglease::fence_token token() const { return {grant.name(), grant.epoch(), {}}; }

    pglease::pq_backend db;
    pglease::lease grant;
};

} // namespace downstream_test
