/// @file pqxx_compat.cpp
/// @brief The libpqxx version differences (see pqxx_compat.hpp).
#include "pglease/internal/pqxx_compat.hpp"

#include "pq/pq_connect.hpp"

#include <libpq-fe.h>

#include <exception>
#include <new>

namespace pglease::pqxx_compat {

// ---- connecting --------------------------------------------------------

#if PGLEASE_PQXX_6

deadline_connect::deadline_connect(const std::string& conninfo, clock::time_point deadline,
                                   int stop_fd)
    : pqxx::connectionpolicy{conninfo}
    , m_deadline{deadline}
    , m_stop_fd{stop_fd} {}

deadline_connect::handle deadline_connect::do_startconnect(handle orig) {
    if (orig != nullptr)
        return orig;
    if (m_deadline == clock::time_point::max() && m_stop_fd < 0)
        return normalconnect(orig); // libpq's own connect_timeout, per host
    return detail::connect_polled(options(), m_deadline, m_stop_fd);
}

bounded_connection::bounded_connection(const std::string& conninfo, clock::time_point deadline,
                                       int stop_fd)
    : deadline_connect_holder{conninfo, deadline, stop_fd}
    , pqxx::connection_base{policy} {
    init();
}

bounded_connection::~bounded_connection() noexcept {
    close();
}

owned_connection connect_bounded(const std::string& conninfo, clock::time_point deadline,
                                 int stop_fd) {
    return owned_connection{conninfo, deadline, stop_fd};
}

void close(connection& conn) noexcept {
    conn.disconnect();
}

void reopen_if_broken(connection& conn) {
    if (conn.is_open())
        return;
        // The first activate() after a break only drops the dead handle, the
        // second connects.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    try {
        conn.activate();
    } catch (const pqxx::broken_connection&) {
        // The dead handle is gone now: connect below.
    }
    if (!conn.is_open())
        conn.activate();
#pragma GCC diagnostic pop
}

#else

owned_connection connect_bounded(const std::string& conninfo, clock::time_point deadline,
                                 int stop_fd) {
    if (deadline == clock::time_point::max() && stop_fd < 0)
        return pqxx::connection{conninfo}; // libpq's own connect_timeout, per host
    return pqxx::connection::seize_raw_connection(
        detail::connect_polled(conninfo, deadline, stop_fd));
}

void close(connection& conn) noexcept {
    try {
        conn.close();
    } catch (const std::exception&) {
        // Closing only frees the handle; nothing to report.
    }
}

void reopen_if_broken(connection& /*conn*/) {
    // A broken connection stays closed from 7.0: the next statement throws
    // broken_connection, which the caller reports.
}

#endif

std::unique_ptr<owned_connection> connect_bounded_ptr(const std::string& conninfo,
                                                      clock::time_point deadline, int stop_fd) {
    // Parentheses: the prvalue initialises the object in place (6.4's
    // connection cannot be moved).
    return std::unique_ptr<owned_connection>(
        new owned_connection(connect_bounded(conninfo, deadline, stop_fd)));
}

std::function<void()> cancel_request(connection& conn) {
    return [&conn] {
        try {
            if (conn.is_open())
                conn.cancel_query();
        } catch (const std::exception&) {
            // A cancel that cannot be sent: the caller's next step (the
            // socket shut down) still ends the wait.
        }
    };
}

// ---- notifications -----------------------------------------------------

#if PGLEASE_PQXX_PARAMS

struct channel_listener::impl {
    connection& conn;
    std::string channel;
};

channel_listener::channel_listener(connection& conn, std::string channel, handler on_notify)
    : m_impl{std::make_unique<impl>(impl{conn, std::move(channel)})} {
    conn.listen(m_impl->channel, [fn = std::move(on_notify)](pqxx::notification n) {
        fn(std::string{n.payload}, n.backend_pid);
    });
}

channel_listener::~channel_listener() {
    if (!m_impl->conn.is_open())
        return; // a closed session listens no more
    try {
        m_impl->conn.listen(m_impl->channel); // no handler: UNLISTEN
    } catch (const std::exception&) {
        // The session broke meanwhile: it listens no more either.
    }
}

#else

struct channel_listener::impl final : pqxx::notification_receiver {
    impl(connection& conn, const std::string& channel, handler on_notify)
        : pqxx::notification_receiver{conn, channel}
        , fn{std::move(on_notify)} {}
    void operator()(const std::string& payload, int backend_pid) override {
        fn(payload, backend_pid);
    }
    handler fn;
};

channel_listener::channel_listener(connection& conn, std::string channel, handler on_notify)
    : m_impl{std::make_unique<impl>(conn, channel, std::move(on_notify))} {}

channel_listener::~channel_listener() = default;

#endif

// ---- notices -----------------------------------------------------------

// pqxx::errorhandler is the one way to observe notices without replacing
// the application's handler: 7.10's set_notice_handler() replaces it and
// cannot be read back. Deprecated from 7.10, still called in 8.x.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct notice_watch::impl final : pqxx::errorhandler {
    impl(connection& conn, std::string text)
        : pqxx::errorhandler{conn}
        , needle{std::move(text)} {}
    bool operator()(const char msg[]) noexcept override {
        if (std::string_view{msg}.find(needle) != std::string_view::npos)
            seen = true;
        return true; // the older handlers (stderr by default) see it too
    }
    std::string needle;
    bool seen = false;
};

notice_watch::notice_watch(connection& conn, std::string needle)
    : m_impl{std::make_unique<impl>(conn, std::move(needle))} {}
#pragma GCC diagnostic pop

notice_watch::~notice_watch() = default;

bool notice_watch::seen() const noexcept {
    return m_impl->seen;
}

void notice_watch::reset() noexcept {
    m_impl->seen = false;
}

// ---- errors ------------------------------------------------------------

bool is_library_error(const std::exception& e) noexcept {
#if PGLEASE_PQXX_6
    return dynamic_cast<const pqxx::pqxx_exception*>(&e) != nullptr;
#else
    return dynamic_cast<const pqxx::usage_error*>(&e) != nullptr ||
           dynamic_cast<const pqxx::conversion_error*>(&e) != nullptr ||
           dynamic_cast<const pqxx::range_error*>(&e) != nullptr ||
           dynamic_cast<const pqxx::argument_error*>(&e) != nullptr ||
           dynamic_cast<const pqxx::internal_error*>(&e) != nullptr ||
           dynamic_cast<const pqxx::failure*>(&e) != nullptr;
#endif
}

} // namespace pglease::pqxx_compat
