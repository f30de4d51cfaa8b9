/// @file handover_listener.cpp
/// @brief Handover requests: sending one, and checking the ones that come
/// to a holder (protocol: pglease/internal/handover_request.hpp).
#include "pglease/internal/handover_request.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <pqxx/pqxx>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace pglease {

struct handover_requester::session {
    pqxx::connection conn;
};

handover_requester::handover_requester(std::string conninfo, handover_request request)
    : m_conninfo{std::move(conninfo)}
    , m_request{std::move(request)} {}

handover_requester::~handover_requester() = default;

bool handover_requester::ask(std::string& error) {
    try {
        if (!m_session || !m_session->conn.is_open())
            m_session.reset(new session{pqxx::connection{m_conninfo}});
        pqxx::nontransaction tx{m_session->conn};
        pqxx_compat::exec_params(tx, "SELECT pg_catalog.pg_notify($1, $2)", handover_channel,
                                 handover_payload(m_request));
        return true;
    } catch (const std::exception& e) {
        m_session.reset();
        error = e.what();
        return false;
    }
}

bool handover_schedule::due(const std::string& holder, time_point now) const {
    if (holder.empty())
        return false;
    if (holder != m_holder)
        return true;
    return now - m_at >= m_every;
}

void handover_schedule::asked(const std::string& holder, time_point now) {
    m_every = holder != m_holder ? m_first : std::min(m_every * 2, m_most);
    m_holder = holder;
    m_at = now;
}

/// Everything the listener's thread uses: it may outlive the listener
/// (a connect in progress when the owner goes).
struct handover_listener::state {
    std::string conninfo;
    std::string lease;
    std::string identity;
    int stop[2] = {-1, -1}; ///< self-pipe: the owner wakes the thread

    std::mutex mutex; ///< guards the callbacks (cleared by the owner) and accepted
    request_fn on_request;
    log_fn log;
    std::optional<accepted_handover> accepted;
    bool taken = false;
    bool ended = false; ///< the thread has closed its session
    std::condition_variable ended_cv;
    std::atomic<bool> listening{false};

    ~state() {
        ::close(stop[0]);
        ::close(stop[1]);
    }

    void say(const std::string& line) {
        const std::lock_guard lock{mutex};
        if (log)
            log(line);
    }

    void check(pqxx_compat::connection& conn, const std::string& payload, int pid);
    void run() noexcept;
    void end() noexcept {
        {
            const std::lock_guard lock{mutex};
            ended = true;
        }
        ended_cv.notify_all();
    }
};

void handover_listener::state::check(pqxx_compat::connection& conn, const std::string& payload,
                                     int pid) {
    const auto request = parse_handover_request(payload);
    if (!request || request->lease != lease)
        return; // another lease's request (or not one at all): not ours to judge
    const std::string who = "pid " + std::to_string(pid);
    if (request->requester == identity) {
        say("ignoring a handover request from " + who + ": the requester is this holder");
        return;
    }
    // The sender must be the holder's own role (or a superuser): the roles
    // lease_handover() itself accepts. The same query sees that its session
    // is still there (it waits for the lease on it).
    pqxx::nontransaction tx{conn};
    const pqxx::result r = pqxx_compat::exec_params(
        tx,
        "SELECT a.usename::text, a.usename = current_user OR coalesce(ro.rolsuper, "
        "false), current_user::text FROM pg_catalog.pg_stat_activity a LEFT JOIN "
        "pg_catalog.pg_roles ro ON ro.oid = a.usesysid WHERE a.pid = $1",
        pid);
    if (r.empty()) {
        say("ignoring a handover request from " + who + ": that session has gone");
        return;
    }
    const std::string role = r[0][0].is_null() ? "(none)" : r[0][0].as<std::string>();
    if (!r[0][1].as<bool>(false)) {
        say("ignoring a handover request for \"" + lease + "\" from " + who + " (role " + role +
            "): only role " + r[0][2].as<std::string>() + " or a superuser may ask for it");
        return;
    }
    const std::lock_guard lock{mutex};
    if (accepted)
        return; // the first verified request wins
    accepted = accepted_handover{request->requester, pid, role};
    if (on_request)
        on_request(*accepted);
}

void handover_listener::state::run() noexcept {
    std::unique_ptr<pqxx_compat::owned_connection> conn;
    // Queued, not checked at once: queries must wait until get_notifs() returned.
    std::vector<std::pair<std::string, int>> inbox;
    std::unique_ptr<pqxx_compat::channel_listener> receiver;
    try {
        // The owner's stop ends the connect too (see ~handover_listener).
        conn = pqxx_compat::connect_bounded_ptr(conninfo, clock::time_point::max(), stop[0]);
        receiver = std::make_unique<pqxx_compat::channel_listener>( // LISTEN
            *conn, handover_channel, [&inbox](const std::string& payload, int backend_pid) {
                if (inbox.size() < 1024)
                    inbox.emplace_back(payload, backend_pid);
            });
        listening.store(true);
    } catch (const std::exception& e) {
        say(std::string{"handover requests will not be heard: "} + e.what());
        return;
    }
    for (;;) {
        try {
            conn->get_notifs();
            auto batch = std::move(inbox);
            inbox.clear();
            for (const auto& [payload, pid] : batch)
                check(*conn, payload, pid);
        } catch (const std::exception& e) {
            // Without this session no request gets through; the lease and
            // the work are unaffected (the requester waits as usual).
            say(std::string{"handover requests are no longer heard: "} + e.what());
            return;
        }
        pollfd fds[2] = {{stop[0], POLLIN, 0}, {conn->sock(), POLLIN, 0}};
        const int rc = ::poll(fds, fds[1].fd >= 0 ? 2 : 1, -1);
        if (rc < 0 && errno != EINTR)
            return;
        if ((fds[0].revents & POLLIN) != 0) {
            // Closed before the receiver goes: no UNLISTEN round trip while
            // the owner waits (a yield_to() hands over only after this).
            pqxx_compat::close(*conn);
            return;
        }
    }
}

handover_listener::handover_listener(std::string conninfo, std::string lease,
                                     std::string own_identity, request_fn on_request, log_fn log)
    : m_state{std::make_shared<state>()} {
    state& s = *m_state;
    s.conninfo = std::move(conninfo);
    s.lease = std::move(lease);
    s.identity = std::move(own_identity);
    s.on_request = std::move(on_request);
    s.log = std::move(log);
    if (::pipe2(s.stop, O_NONBLOCK | O_CLOEXEC) != 0)
        throw std::runtime_error{std::string{"pipe2: "} + std::strerror(errno)};
    std::thread{[keep = m_state] {
        keep->run();
        keep->end();
    }}.detach();
}

handover_listener::~handover_listener() {
    {
        // After this no callback runs (they run under the same mutex).
        const std::lock_guard lock{m_state->mutex};
        m_state->on_request = nullptr;
        m_state->log = nullptr;
    }
    const char b = 1;
    [[maybe_unused]] const auto n = ::write(m_state->stop[1], &b, 1);
    // The thread leaves a connect or a wait at once; a query that a server
    // does not answer can hold it, so the wait is bounded (then it stays
    // detached, blocked in recv(), never inside libkrb5 at exit).
    std::unique_lock lock{m_state->mutex};
    m_state->ended_cv.wait_for(lock, stop_wait, [this] { return m_state->ended; });
}

std::optional<accepted_handover> handover_listener::take() {
    const std::lock_guard lock{m_state->mutex};
    if (m_state->taken || !m_state->accepted)
        return std::nullopt;
    m_state->taken = true;
    return m_state->accepted;
}

bool handover_listener::listening() const noexcept {
    return m_state->listening.load();
}

} // namespace pglease
