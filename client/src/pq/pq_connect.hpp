/// @file pq_connect.hpp
/// @brief A libpq connect that ends by a deadline. libpq's own
/// connect_timeout counts whole seconds (at least 2) per host, so it
/// cannot keep a connect inside a grant's local deadline; this one drives
/// PQconnectStart/PQconnectPoll itself and gives up at the earlier of the
/// deadline and the conninfo's connect_timeout (over all hosts). The
/// libpqxx connection around it is made in pqxx_compat (connect_bounded).
#pragma once

#include "pglease/internal/clock.hpp"

#include <libpq-fe.h>

#include <string>

namespace pglease::detail {

/// An open libpq connection to @p conninfo by @p deadline (max(): none
/// but connect_timeout), abandoned as soon as @p stop_fd (if >= 0) is
/// readable (an owner that goes away must not leave a thread inside libpq
/// while the process exits: libkrb5's destructors then abort it). The
/// caller owns the result. Throws pqxx::broken_connection.
[[nodiscard]] PGconn* connect_polled(const std::string& conninfo, clock::time_point deadline,
                                     int stop_fd);

} // namespace pglease::detail
