/// @file cmd_watch.cpp
/// @brief `pglease watch [NAME] [--json] [--count N]`: one line per lease
/// event, as it happens (LISTEN pg_lease, NOTIFY delivered at commit).
#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "status/event.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <pqxx/pqxx>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>

namespace pglease::cli {
namespace {

int g_stop_pipe[2] = {-1, -1};
volatile sig_atomic_t g_stop = 0;

void on_stop(int /*sig*/) {
    const int saved = errno;
    g_stop = 1;
    const char b = 1;
    [[maybe_unused]] const auto n = ::write(g_stop_pipe[1], &b, 1);
    errno = saved;
}

/// Prints each event of lease @p name (all when empty) as one line.
pqxx_compat::channel_listener::handler printer(const std::string& name, bool json, long& printed) {
    return [&name, json, &printed](const std::string& payload, int /*backend_pid*/) {
        const auto event = parse_event(payload);
        if (!event) {
            std::cerr << "pglease: warning: unreadable event payload: " << payload << std::endl;
            return;
        }
        if (!name.empty() && event->name != name)
            return;
        const std::string now = utc_now_iso();
        std::cout << (json ? event_json_line(*event, now) : event_text_line(*event, now))
                  << std::endl;
        ++printed;
    };
}

/// Sleeps up to @p ms, or until SIGINT/SIGTERM.
void pause_for(int ms) {
    pollfd p{g_stop_pipe[0], POLLIN, 0};
    (void)::poll(&p, 1, ms);
}

} // namespace

int cmd_watch(const global_options& g, const std::string& name, bool json, long count) {
    if (::pipe2(g_stop_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        return report_error(std::string{"pipe2: "} + std::strerror(errno));
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    std::string conninfo;
    try {
        conninfo = plain_conninfo(g);
    } catch (const std::exception& e) {
        return report_error(e);
    }
    long printed = 0;
    bool ever_connected = false;
    while (g_stop == 0 && (count <= 0 || printed < count)) {
        std::unique_ptr<pqxx::connection> conn;
        std::unique_ptr<pqxx_compat::channel_listener> listener;
        try {
            conn = std::make_unique<pqxx::connection>(conninfo);
            listener = std::make_unique<pqxx_compat::channel_listener>(
                *conn, "pg_lease", printer(name, json, printed));
            // LISTEN is issued lazily by libpqxx 6; force it now, so that
            // events committed from here on are delivered.
            conn->get_notifs();
            if (ever_connected)
                info(g, "reconnected; events in between were missed");
            else if (!g.quiet)
                info(g, "watching " +
                            (name.empty() ? std::string{"all leases"} : "lease \"" + name + "\"") +
                            " (LISTEN pg_lease)");
            ever_connected = true;
            while (g_stop == 0 && (count <= 0 || printed < count)) {
                pollfd fds[2] = {{conn->sock(), POLLIN, 0}, {g_stop_pipe[0], POLLIN, 0}};
                const int rc = ::poll(fds, 2, 60000);
                if (rc < 0 && errno != EINTR)
                    throw pqxx::broken_connection{std::string{"poll: "} + std::strerror(errno)};
                conn->get_notifs(); // throws broken_connection when the server went away
                if (!conn->is_open())
                    throw pqxx::broken_connection{"connection closed"};
            }
        } catch (const std::exception& e) {
            if (!ever_connected)
                return report_error(e);
            if (g_stop != 0)
                break;
            std::cerr << "pglease: warning: " << e.what() << "; reconnecting in 1s" << std::endl;
            listener.reset();
            conn.reset();
            pause_for(1000);
        }
    }
    return exit_ok;
}

} // namespace pglease::cli
