/// @file pq_connect.cpp
/// @brief A connect that ends by a deadline (see pq_connect.hpp).
#include "pq/pq_connect.hpp"

#include <pqxx/except>

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string_view>

namespace pglease::detail {

namespace {

using steady = std::chrono::steady_clock;

/// The conninfo's connect_timeout, as libpq reads it (at least 2 s; none
/// when unset, 0 or not a number).
std::optional<std::chrono::seconds> connect_timeout_of(const std::string& conninfo) {
    const std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> parsed{
        PQconninfoParse(conninfo.c_str(), nullptr), &PQconninfoFree};
    if (!parsed)
        return std::nullopt;
    for (const PQconninfoOption* o = parsed.get(); o->keyword != nullptr; ++o) {
        if (std::string_view{o->keyword} != "connect_timeout" || o->val == nullptr)
            continue;
        char* end = nullptr;
        const long s = std::strtol(o->val, &end, 10);
        if (end == o->val || s <= 0)
            return std::nullopt;
        return std::chrono::seconds{std::max(s, 2L)};
    }
    return std::nullopt;
}

/// Frees a PGconn that never became a connection's.
struct pgconn_deleter {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using owned_pgconn = std::unique_ptr<PGconn, pgconn_deleter>;

[[noreturn]] void fail(const owned_pgconn& c, const std::string& fallback) {
    std::string why = c ? PQerrorMessage(c.get()) : "";
    if (why.empty())
        why = fallback;
    throw pqxx::broken_connection{why};
}

} // namespace

PGconn* connect_polled(const std::string& conninfo, clock::time_point deadline, int stop_fd) {
    auto until = deadline;
    if (const auto limit = connect_timeout_of(conninfo))
        until = std::min(until, steady::now() + *limit);
    owned_pgconn c{PQconnectStart(conninfo.c_str())};
    if (!c)
        throw std::bad_alloc{};
    if (PQstatus(c.get()) == CONNECTION_BAD)
        fail(c, "cannot start a connection");
    // As libpq's connectDBComplete(), with the deadline for its timeout.
    PostgresPollingStatusType state = PGRES_POLLING_WRITING;
    for (;;) {
        if (state == PGRES_POLLING_OK)
            return c.release();
        if (state == PGRES_POLLING_FAILED)
            fail(c, "connection failed");
        const auto now = steady::now();
        if (now >= until)
            throw pqxx::broken_connection{
                "timeout expired: no connection by the caller's deadline"};
        const int wait_ms =
            until == clock::time_point::max()
                ? -1
                : static_cast<int>(std::min<long long>(
                      std::chrono::ceil<std::chrono::milliseconds>(until - now).count(), INT_MAX));
        pollfd fds[2] = {{PQsocket(c.get()),
                          static_cast<short>(state == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0},
                         {stop_fd, POLLIN, 0}};
        const int rc = ::poll(fds, stop_fd >= 0 ? 2 : 1, wait_ms);
        if (rc < 0 && errno != EINTR)
            fail(c, "poll failed while connecting");
        if (stop_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP)) != 0)
            throw pqxx::broken_connection{"connect abandoned: its owner stopped"};
        if (rc > 0 && fds[0].revents != 0)
            state = PQconnectPoll(c.get());
    }
}

} // namespace pglease::detail
