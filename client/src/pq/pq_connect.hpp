/// @file pq_connect.hpp
/// @brief A libpqxx connection whose connect ends by a deadline. libpq's
/// own connect_timeout counts whole seconds (at least 2) per host, so it
/// cannot keep a connect inside a grant's local deadline; this one drives
/// PQconnectStart/PQconnectPoll itself and gives up at the earlier of the
/// deadline and the conninfo's connect_timeout (over all hosts).
#pragma once

#include "pglease/clock.hpp"

#include <pqxx/connection_base>
#include <pqxx/connectionpolicy>

#include <string>

namespace pglease::detail {

/// The policy: with no deadline (time_point::max()) and no stop descriptor,
/// a plain blocking connect as pqxx::connection makes; otherwise a polled
/// connect that throws pqxx::broken_connection when the deadline passes or
/// @p stop_fd becomes readable (an owner that goes away must not leave a
/// thread inside libpq while the process exits: libkrb5's destructors then
/// abort it).
class deadline_connect final : public pqxx::connectionpolicy {
public:
    deadline_connect(const std::string& conninfo, clock::time_point deadline, int stop_fd = -1);
    handle do_startconnect(handle orig) override;

private:
    clock::time_point m_deadline;
    int m_stop_fd;
};

/// Holds the policy, so it exists before the connection_base that uses it.
struct deadline_connect_holder {
    deadline_connect_holder(const std::string& conninfo, clock::time_point deadline, int stop_fd)
        : policy{conninfo, deadline, stop_fd} {}
    deadline_connect policy;
};

/// pqxx::connection, connected (or failed) by @p deadline, or abandoned
/// as soon as @p stop_fd (if any) is readable.
class bounded_connection final : private deadline_connect_holder, public pqxx::connection_base {
public:
    bounded_connection(const std::string& conninfo, clock::time_point deadline, int stop_fd = -1);
    ~bounded_connection() noexcept;

    bounded_connection(const bounded_connection&) = delete;
    bounded_connection& operator=(const bounded_connection&) = delete;
    bounded_connection(bounded_connection&&) = delete;
    bounded_connection& operator=(bounded_connection&&) = delete;
};

} // namespace pglease::detail
