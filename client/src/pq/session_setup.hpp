/// @file session_setup.hpp
/// @brief The SET statements a pq_backend session starts with.
#pragma once

#include "pglease/connection_options.hpp"

#include <chrono>
#include <string>

namespace pglease::detail {

/// How often a server (14 and later) checks, while a statement runs,
/// whether the session's client is still there. A call the client had to
/// sever (its cancel did not land) then ends within this on the server
/// too, with the row locks it waits for or holds, instead of running on
/// until statement_timeout.
inline constexpr std::chrono::milliseconds client_check_interval{1000};

/// The session's setup, one message: statement_timeout as a server-side
/// backstop (max(call_timeout, acquire_timeout): each call is bounded on
/// the client side), and on servers of @p server_version 140000 or later
/// client_connection_check_interval (13 does not know it).
[[nodiscard]] std::string session_setup(const connection_options& options, int server_version);

} // namespace pglease::detail
