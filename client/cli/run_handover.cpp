/// @file run_handover.cpp
/// @brief `pglease run`'s take-over requests: sending one (--take-over) and
/// checking the ones that come to a holder (protocol: run_handover.hpp).
#include "run_handover.hpp"

#include "common.hpp"
#include "exit_codes.hpp"
#include "run_signals.hpp"
#include "run_supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

namespace pglease::cli {
namespace {

/// Queues (payload, sender pid): queries must wait until get_notifs() returned.
class inbox_receiver final : public pqxx::notification_receiver {
public:
    inbox_receiver(pqxx::connection_base& conn, std::vector<std::pair<std::string, int>>& inbox)
        : pqxx::notification_receiver{conn, handover_channel}
        , m_inbox{inbox} {}

    void operator()(const std::string& payload, int backend_pid) override {
        if (m_inbox.size() < 1024)
            m_inbox.emplace_back(payload, backend_pid);
    }

private:
    std::vector<std::pair<std::string, int>>& m_inbox;
};

} // namespace

bool takeover_requester::ask(std::string& error) {
    try {
        if (!m_conn || !m_conn->is_open())
            m_conn = std::make_unique<pqxx::connection>(m_conninfo);
        pqxx::nontransaction tx{*m_conn};
        tx.exec_params("SELECT pg_catalog.pg_notify($1, $2)", handover_channel,
                       handover_payload(m_request));
        return true;
    } catch (const std::exception& e) {
        m_conn.reset();
        error = e.what();
        return false;
    }
}

handover_listener::handover_listener(const std::string& conninfo, std::string lease,
                                     std::string own_identity,
                                     std::function<void(const std::string&)> log)
    : m_lease{std::move(lease)}
    , m_identity{std::move(own_identity)}
    , m_log{std::move(log)}
    , m_conn{conninfo} {
    m_receiver = std::make_unique<inbox_receiver>(m_conn, m_inbox); // LISTEN
    if (::pipe2(m_stop, O_NONBLOCK | O_CLOEXEC) != 0)
        throw std::runtime_error{std::string{"pipe2: "} + std::strerror(errno)};
    m_thread = std::thread{[this] { run(); }};
}

handover_listener::~handover_listener() {
    const char b = 1;
    [[maybe_unused]] const auto n = ::write(m_stop[1], &b, 1);
    if (m_thread.joinable())
        m_thread.join();
    ::close(m_stop[0]);
    ::close(m_stop[1]);
    m_receiver.reset();
}

std::optional<accepted_request> handover_listener::take() {
    const std::lock_guard lock{m_mutex};
    if (m_taken || !m_accepted)
        return std::nullopt;
    m_taken = true;
    return m_accepted;
}

void handover_listener::check(const std::string& payload, int pid) {
    const auto request = parse_handover_request(payload);
    if (!request || request->lease != m_lease)
        return; // another lease's request (or not one at all): not ours to judge
    const std::string who = "pid " + std::to_string(pid);
    if (request->requester == m_identity) {
        m_log("ignoring a take-over request from " + who + ": the requester is this holder");
        return;
    }
    // The sender must be the holder's own role (or a superuser): the roles
    // lease_handover() itself accepts. The same query sees that its session
    // is still there (it waits for the lease on it).
    pqxx::nontransaction tx{m_conn};
    const pqxx::result r =
        tx.exec_params("SELECT a.usename::text, a.usename = current_user OR coalesce(ro.rolsuper, "
                       "false), current_user::text FROM pg_catalog.pg_stat_activity a LEFT JOIN "
                       "pg_catalog.pg_roles ro ON ro.oid = a.usesysid WHERE a.pid = $1",
                       pid);
    if (r.empty()) {
        m_log("ignoring a take-over request from " + who + ": that session has gone");
        return;
    }
    const std::string role = r[0][0].is_null() ? "(none)" : r[0][0].as<std::string>();
    if (!r[0][1].as<bool>(false)) {
        m_log("ignoring a take-over request for \"" + m_lease + "\" from " + who + " (role " +
              role + "): only role " + r[0][2].as<std::string>() +
              " or a superuser may ask for it");
        return;
    }
    const std::lock_guard lock{m_mutex};
    if (m_accepted)
        return; // the first verified request wins
    m_accepted = accepted_request{request->requester, pid, role};
    run_signals::wake_main(run_signals::handover_byte);
}

void handover_listener::run() noexcept {
    for (;;) {
        try {
            m_conn.get_notifs();
            auto inbox = std::move(m_inbox);
            m_inbox.clear();
            for (const auto& [payload, pid] : inbox)
                check(payload, pid);
        } catch (const std::exception& e) {
            // Without this session no request gets through; the lease and
            // the job are unaffected (the requester waits as usual).
            m_log(std::string{"take-over requests are no longer heard: "} + e.what());
            return;
        }
        pollfd fds[2] = {{m_stop[0], POLLIN, 0}, {m_conn.sock(), POLLIN, 0}};
        const int rc = ::poll(fds, fds[1].fd >= 0 ? 2 : 1, -1);
        if (rc < 0 && errno != EINTR)
            return;
        if ((fds[0].revents & POLLIN) != 0)
            return;
    }
}

// --- the supervisor's steps ---------------------------------------------

void supervisor::ask_for_takeover() {
    // Ask each new holder at once, and the same one again after the retry
    // period, doubling up to the ttl: a holder that just started may not be
    // listening yet. One that does not understand the request keeps the
    // lease, and we wait as usual.
    const std::string holder = m_lease.holder();
    const auto now = steady::now();
    if (holder.empty())
        return;
    if (holder != m_asked_holder)
        m_ask_every = m_a.timing.retry;
    else if (now - m_asked_at < m_ask_every)
        return;
    else
        m_ask_every = std::min(m_ask_every * 2, m_a.timing.ttl);
    if (!m_requester)
        m_requester =
            std::make_unique<takeover_requester>(plain_conninfo(m_g) + " connect_timeout=2",
                                                 handover_request{m_a.lease, m_lease.identity()});
    std::string error;
    if (!m_requester->ask(error)) {
        info(m_g, "could not send the take-over request (waiting as usual): " + error);
        return;
    }
    m_asked_holder = holder;
    m_asked_at = now;
    info(m_g,
         "asked " + holder + " to hand lease \"" + m_a.lease + "\" over to " + m_lease.identity());
}

void supervisor::listen_for_takeover_requests() {
    if (m_a.no_handover)
        return;
    try {
        const global_options& g = m_g;
        m_listener = std::make_unique<handover_listener>(
            plain_conninfo(m_g) + " connect_timeout=2", m_a.lease, m_lease.identity(),
            [&g](const std::string& line) { info(g, line); });
    } catch (const std::exception& e) {
        std::cerr << "pglease: warning: take-over requests will not be heard: " << e.what()
                  << std::endl;
    }
}

bool supervisor::take_handover_request() {
    if (m_handover || !m_listener)
        return false;
    m_handover = m_listener->take();
    if (!m_handover)
        return false;
    info(m_g, "take-over requested by " + m_handover->requester + " (pid " +
                  std::to_string(m_handover->pid) + ", role " + m_handover->role +
                  "): stopping the job, then handing lease \"" + m_a.lease + "\" over");
    return true;
}

int supervisor::finish_handover() {
    const std::string& to = m_handover->requester;
    try {
        if (const auto epoch = m_lease.hand_over(to)) {
            info(m_g, "handed lease \"" + m_a.lease + "\" (epoch " +
                          std::to_string(m_lease.epoch()) + ") over to " + to + " (epoch " +
                          std::to_string(*epoch) + "); exiting 0");
            return exit_ok;
        }
        info(m_g, "lease \"" + m_a.lease + "\" was no longer ours to hand over; exiting 76");
        return exit_lease_lost;
    } catch (const std::exception& e) {
        std::cerr << "pglease: warning: could not hand lease \"" << m_a.lease << "\" over to " << to
                  << " (releasing it instead): " << e.what() << std::endl;
        release_lease(false);
        return exit_error;
    }
}

} // namespace pglease::cli
