/// @file takeover_listener.hpp
/// @brief Internal: planned take-over between holders of one lease, the
/// protocol shared by `pglease run` and the elector.
///
/// Protocol (no extension change; the channel is not pg_lease):
///  1. The requester (`run --take-over`, elector_config::take_over), finding
///     the lease held, sends NOTIFY pg_lease_handover
///     '{"lease":L,"requester":ID}' from a session of its own that stays
///     open while it waits (takeover_requester).
///  2. The holder LISTENs on that channel on a session of its own
///     (takeover_listener). Anyone can NOTIFY, so a request for its lease
///     counts only if the sending backend (the notification's pid) is still
///     connected and logged in as the holder's own role, or as a superuser:
///     the roles that lease_handover() itself would accept. Others are
///     ignored and logged.
///  3. The holder stops its work, stops renewing and calls
///     lease_handover(L, me, epoch, ID); the requester wakes on the
///     handover event (NOTIFY pg_lease), acquires (same epoch) and starts.
/// A holder that does not understand the request keeps the lease; the
/// requester waits as usual.
#pragma once

#include "election/takeover_request.hpp"

#include <pqxx/pqxx>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace pglease::detail {

/// The requester's side: one session that sends requests and stays open
/// (the holder checks that the sender is still connected).
class takeover_requester {
public:
    /// @p conninfo should carry a connect_timeout: ask() connects.
    takeover_requester(std::string conninfo, takeover_request request)
        : m_conninfo{std::move(conninfo)}
        , m_request{std::move(request)} {}

    /// Sends the request (connecting first if needed). False, with the
    /// reason in @p error, when it could not be sent.
    bool ask(std::string& error);

private:
    std::string m_conninfo;
    takeover_request m_request;
    std::unique_ptr<pqxx::connection> m_conn;
};

/// When to ask a holder (again): at once for a holder not asked yet, then
/// after @p first, doubling up to @p most (a holder that just started may
/// not be listening yet; one that does not answer is not flooded).
class takeover_schedule {
public:
    using time_point = std::chrono::steady_clock::time_point;
    using duration = std::chrono::steady_clock::duration;
    takeover_schedule(duration first, duration most)
        : m_first{first}
        , m_most{most}
        , m_every{first} {}
    /// True when @p holder should be asked at @p now; then call asked().
    [[nodiscard]] bool due(const std::string& holder, time_point now) const;
    void asked(const std::string& holder, time_point now);
    /// When the holder asked last is due again (max() before any ask).
    [[nodiscard]] time_point next() const noexcept {
        return m_holder.empty() ? time_point::max() : m_at + m_every;
    }

private:
    duration m_first;
    duration m_most;
    duration m_every;
    std::string m_holder;
    time_point m_at{};
};

/// A request that passed the checks.
struct accepted_takeover {
    std::string requester;
    int pid = 0;      ///< the backend that sent it
    std::string role; ///< its login role
};

/// The holder's side: connects, LISTENs and checks requests on a session
/// and a thread of its own, so the holder's loop never waits for it. The
/// first verified request for @p lease is passed to @p on_request, once,
/// on the listener's thread; @p log gets a line for every request ignored
/// (and for a session lost: no later request gets through, the lease and
/// the work are unaffected).
class takeover_listener {
public:
    using log_fn = std::function<void(const std::string&)>;
    using request_fn = std::function<void(const accepted_takeover&)>;

    takeover_listener(std::string conninfo, std::string lease, std::string own_identity,
                      request_fn on_request, log_fn log);
    /// Stops the thread and waits for it to close its session: a connect in
    /// progress is abandoned at once. Waits at most stop_wait (a query the
    /// server does not answer); no callback runs after this returned.
    ~takeover_listener();

    /// The bound on the destructor's wait.
    static constexpr std::chrono::milliseconds stop_wait{500};
    takeover_listener(const takeover_listener&) = delete;
    takeover_listener& operator=(const takeover_listener&) = delete;
    takeover_listener(takeover_listener&&) = delete;
    takeover_listener& operator=(takeover_listener&&) = delete;

    /// The first verified request, once (nullopt if none yet).
    [[nodiscard]] std::optional<accepted_takeover> take();

    /// True once the session LISTENs (tests: a request sent before that is
    /// not heard).
    [[nodiscard]] bool listening() const noexcept;

private:
    struct state;
    std::shared_ptr<state> m_state; ///< shared with the thread, which may outlive this
};

} // namespace pglease::detail
