/// @file session_setup.cpp
/// @brief The SET statements a pq_backend session starts with.
#include "pq/session_setup.hpp"

#include <algorithm>

namespace pglease::detail {

std::string session_setup(const connection_options& options, int server_version) {
    const auto backstop = std::max(options.call_timeout, options.acquire_timeout);
    std::string sql = "SET statement_timeout = " + std::to_string(backstop.count());
    if (server_version >= 140000)
        sql += "; SET client_connection_check_interval = " +
               std::to_string(client_check_interval.count());
    return sql;
}

} // namespace pglease::detail
