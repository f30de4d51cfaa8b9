/// @file pg_terminate.hpp
/// @brief Ending a server session from a test and waiting until it is gone.
#pragma once

#include "pglease/internal/pqxx_compat.hpp"
#include <pqxx/pqxx>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace pglease::test {

/// Ends backend @p pid through @p admin and waits, at most 5 s, until it
/// left pg_stat_activity: on every major (pg_terminate_backend's own
/// timeout argument is PostgreSQL 14 and later).
inline void terminate_backend(pqxx::connection& admin, int pid) {
    pqxx::nontransaction tx{admin};
    pqxx_compat::exec_params(tx, "SELECT pg_terminate_backend($1)", pid);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds{5};
    while (pqxx_compat::exec_params1(tx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                                     pid)[0]
               .as<int>() != 0) {
        if (std::chrono::steady_clock::now() >= until)
            throw std::runtime_error{"backend " + std::to_string(pid) +
                                     " still there 5 s after pg_terminate_backend"};
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
}

} // namespace pglease::test
