/// @file pqxx_compat.hpp
/// @brief Every difference between the libpqxx versions pg_lease
/// builds against (6.4, 7.x from 7.6, 8.x), in one place, as pg_compat.h
/// is for PostgreSQL majors. No other file tests libpqxx's version. The
/// library, the `pglease` command and the suites use it; it is installed
/// for them, not as an interface of its own (it may change in any release).
///
/// - 6.4 (Debian 12, Ubuntu 22.04): connections derive from
///   connection_base and connect through a connection policy; a broken
///   connection reopens itself; exec_params()/exec_prepared().
/// - 7.0-7.9: one connection class, which never reopens; notification
///   receivers and error handlers as in 6.4.
/// - 7.10 and 8.x: connection::listen() and notice handlers replace the
///   receiver and handler classes (deprecated); statements take
///   pqxx::params, prepared ones pqxx::prepped; 8.x's connection is final.
#pragma once

#include "pglease/internal/clock.hpp"

#include <pqxx/pqxx>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#if PQXX_VERSION_MAJOR < 7
#define PGLEASE_PQXX_6 1
#else
#define PGLEASE_PQXX_6 0
#endif
#if PQXX_VERSION_MAJOR > 7 || (PQXX_VERSION_MAJOR == 7 && PQXX_VERSION_MINOR >= 10)
#define PGLEASE_PQXX_PARAMS 1 /* exec(query, params), exec(prepped, params), listen() */
#else
#define PGLEASE_PQXX_PARAMS 0
#endif

namespace pglease::pqxx_compat {

/// The libpqxx version the library was compiled against ("7.10.7").
inline constexpr std::string_view version = PQXX_VERSION;

/// What a function that works on any open connection takes.
#if PGLEASE_PQXX_6
using connection = pqxx::connection_base;
#else
using connection = pqxx::connection;
#endif

/// A connection the library opens itself, connected (or failed) by a
/// deadline, or abandoned as soon as a stop descriptor is readable; see
/// connect_bounded(). Not movable on 6.4 (a policy-based class there):
/// hold it where it is made, or through connect_bounded_ptr().
#if PGLEASE_PQXX_6
/// 6.4's connection policy for connect_bounded(): with no deadline and no
/// stop descriptor, libpq's blocking connect; otherwise connect_polled().
class deadline_connect final : public pqxx::connectionpolicy {
public:
    deadline_connect(const std::string& conninfo, clock::time_point deadline, int stop_fd);
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

class bounded_connection final : private deadline_connect_holder, public pqxx::connection_base {
public:
    bounded_connection(const std::string& conninfo, clock::time_point deadline, int stop_fd);
    ~bounded_connection() noexcept;
    bounded_connection(const bounded_connection&) = delete;
    bounded_connection& operator=(const bounded_connection&) = delete;
    bounded_connection(bounded_connection&&) = delete;
    bounded_connection& operator=(bounded_connection&&) = delete;
};
using owned_connection = bounded_connection;
#else
using owned_connection = pqxx::connection;
#endif

/// Opens a connection to @p conninfo by @p deadline (max(): libpq's own
/// connect_timeout, per host), abandoned as soon as @p stop_fd (if >= 0)
/// becomes readable. Throws pqxx::broken_connection.
[[nodiscard]] owned_connection connect_bounded(const std::string& conninfo,
                                               clock::time_point deadline, int stop_fd = -1);
/// connect_bounded(), on the heap.
[[nodiscard]] std::unique_ptr<owned_connection>
connect_bounded_ptr(const std::string& conninfo, clock::time_point deadline, int stop_fd = -1);

/// Closes @p conn without a round trip (no UNLISTEN, no terminate wait).
void close(connection& conn) noexcept;

/// True when a broken @p conn can be opened again in place (libpqxx 6.4
/// reopens on the next use; from 7.0 a broken connection stays closed and
/// the application makes a new one).
inline constexpr bool reopens = PGLEASE_PQXX_6 != 0;

/// Reopens @p conn if it is broken and the version can (see reopens).
void reopen_if_broken(connection& conn);

/// Asks the server to cancel what @p conn runs; callable from another
/// thread while the owner waits for a reply (libpqxx's cancel_query(),
/// documented as such from 7.x, the same PQgetCancel + PQcancel in 6.4).
/// Never throws. @p conn must outlive every call.
[[nodiscard]] std::function<void()> cancel_request(connection& conn);

/// While it lives, calls handler(payload, backend pid) for each
/// notification on @p channel that get_notifs() delivers on @p conn. Its
/// constructor sends LISTEN (no transaction may be open on @p conn).
class channel_listener {
public:
    using handler = std::function<void(const std::string& payload, int backend_pid)>;
    channel_listener(connection& conn, std::string channel, handler on_notify);
    channel_listener(const channel_listener&) = delete;
    channel_listener& operator=(const channel_listener&) = delete;
    channel_listener(channel_listener&&) = delete;
    channel_listener& operator=(channel_listener&&) = delete;
    ~channel_listener();

private:
    struct impl;
    std::unique_ptr<impl> m_impl;
};

/// While it lives, notes whether a notice or warning of the server on
/// @p conn contains @p needle; the connection's other notice handling goes
/// on as before (it observes, it does not replace).
class notice_watch {
public:
    notice_watch(connection& conn, std::string needle);
    notice_watch(const notice_watch&) = delete;
    notice_watch& operator=(const notice_watch&) = delete;
    notice_watch(notice_watch&&) = delete;
    notice_watch& operator=(notice_watch&&) = delete;
    ~notice_watch();

    [[nodiscard]] bool seen() const noexcept;
    void reset() noexcept;

private:
    struct impl;
    std::unique_ptr<impl> m_impl;
};

/// True for the usage, conversion, range and internal errors of libpqxx
/// (not the server's): a common base in 6.4 and 8.x, several in 7.x.
[[nodiscard]] bool is_library_error(const std::exception& e) noexcept;

/// Runs @p sql with $1.. bound to @p args.
template <typename... Args>
pqxx::result exec_params(pqxx::transaction_base& tx, const std::string& sql, const Args&... args) {
#if PGLEASE_PQXX_PARAMS
    return tx.exec(sql, pqxx::params{args...});
#else
    return tx.exec_params(sql, args...);
#endif
}

/// Runs the statement prepared as @p name with $1.. bound to @p args.
template <typename... Args>
pqxx::result exec_prepared(pqxx::transaction_base& tx, const std::string& name,
                           const Args&... args) {
#if PGLEASE_PQXX_PARAMS
    return tx.exec(pqxx::prepped{name}, pqxx::params{args...});
#else
    return tx.exec_prepared(name, args...);
#endif
}

/// The one row of @p r (from @p what); pqxx::unexpected_rows otherwise.
inline pqxx::row only_row(const pqxx::result& r, const std::string& what) {
    if (r.size() != 1)
        throw pqxx::unexpected_rows{"expected 1 row, got " + std::to_string(r.size()) + ": " +
                                    what};
    return pqxx::row{r[0]}; // a row_ref in libpqxx 8
}

/// @p r (from @p what), which must have no rows; pqxx::unexpected_rows otherwise.
inline pqxx::result no_rows(pqxx::result r, const std::string& what) {
    if (!r.empty())
        throw pqxx::unexpected_rows{"expected no rows, got " + std::to_string(r.size()) + ": " +
                                    what};
    return r;
}

/// exec_prepared() of a statement that returns exactly one row: that row.
template <typename... Args>
pqxx::row exec_prepared1(pqxx::transaction_base& tx, const std::string& name, const Args&... args) {
    return only_row(exec_prepared(tx, name, args...), name);
}

/// exec_prepared() of a statement that returns no rows.
template <typename... Args>
pqxx::result exec_prepared0(pqxx::transaction_base& tx, const std::string& name,
                            const Args&... args) {
    return no_rows(exec_prepared(tx, name, args...), name);
}

/// exec_params() of a statement that returns exactly one row: that row.
template <typename... Args>
pqxx::row exec_params1(pqxx::transaction_base& tx, const std::string& sql, const Args&... args) {
    return only_row(exec_params(tx, sql, args...), sql);
}

/// exec_params() of a statement that returns no rows.
template <typename... Args>
pqxx::result exec_params0(pqxx::transaction_base& tx, const std::string& sql, const Args&... args) {
    return no_rows(exec_params(tx, sql, args...), sql);
}

/// Runs @p sql, which must return no rows.
inline pqxx::result exec0(pqxx::transaction_base& tx, const std::string& sql) {
    return no_rows(tx.exec(sql), sql);
}

/// Runs @p sql, which must return exactly one row: that row.
inline pqxx::row exec1(pqxx::transaction_base& tx, const std::string& sql) {
    return only_row(tx.exec(sql), sql);
}

} // namespace pglease::pqxx_compat
