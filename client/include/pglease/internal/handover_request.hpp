/// @file handover_request.hpp
/// @brief Handover requests: a process that wants a lease asks its holder
/// to hand it over (a planned handover, e.g. a rolling deploy). The
/// protocol of `pglease run --take-over` and elector_config::request_handover;
/// not a takeover, which is what a grant of an expired lease is.
///
/// Protocol (no extension change; the channel is not pg_lease):
///  1. The requester (`run --take-over`, elector_config::request_handover), finding
///     the lease held, sends NOTIFY pg_lease_handover
///     '{"lease":L,"requester":ID}' from a session of its own that stays
///     open while it waits (handover_requester).
///  2. The holder LISTENs on that channel on a session of its own
///     (handover_listener). Anyone can NOTIFY, so a request for its lease
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

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace pglease {

/// The channel of handover requests. Not `pg_lease`: that one carries the
/// extension's lease events, which followers parse.
inline constexpr const char* handover_channel = "pg_lease_handover";

/// {"lease":"jobs","requester":"host:pid:random"}: please hand lease
/// `jobs` to identity `requester` (the requesting `pglease run` or elector).
struct handover_request {
    std::string lease;
    std::string requester;
};

/// The payload for @p r (compact JSON).
[[nodiscard]] std::string handover_payload(const handover_request& r);

/// Parses a payload: nullopt unless a JSON object with string "lease" and
/// "requester" of 1..255 bytes each. Never throws. Who sent it is checked
/// elsewhere (the notification's backend pid), not here.
[[nodiscard]] std::optional<handover_request>
parse_handover_request(std::string_view payload) noexcept;

/// The requester's side: one session that sends requests and stays open
/// (the holder checks that the sender is still connected).
class handover_requester {
public:
    /// @p conninfo should carry a connect_timeout: ask() connects.
    handover_requester(std::string conninfo, handover_request request);
    ~handover_requester();
    handover_requester(const handover_requester&) = delete;
    handover_requester& operator=(const handover_requester&) = delete;
    handover_requester(handover_requester&&) = delete;
    handover_requester& operator=(handover_requester&&) = delete;

    /// Sends the request (connecting first if needed). False, with the
    /// reason in @p error, when it could not be sent.
    bool ask(std::string& error);

private:
    struct session;
    std::string m_conninfo;
    handover_request m_request;
    std::unique_ptr<session> m_session;
};

/// When to ask a holder (again): at once for a holder not asked yet, then
/// after @p first, doubling up to @p most (a holder that just started may
/// not be listening yet; one that does not answer is not flooded).
class handover_schedule {
public:
    using time_point = std::chrono::steady_clock::time_point;
    using duration = std::chrono::steady_clock::duration;
    handover_schedule(duration first, duration most)
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
struct accepted_handover {
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
class handover_listener {
public:
    using log_fn = std::function<void(const std::string&)>;
    using request_fn = std::function<void(const accepted_handover&)>;

    handover_listener(std::string conninfo, std::string lease, std::string own_identity,
                      request_fn on_request, log_fn log);
    /// Stops the thread and waits for it to close its session: a connect in
    /// progress is abandoned at once. Waits at most stop_wait (a query the
    /// server does not answer); no callback runs after this returned.
    ~handover_listener();

    /// The bound on the destructor's wait.
    static constexpr std::chrono::milliseconds stop_wait{500};
    handover_listener(const handover_listener&) = delete;
    handover_listener& operator=(const handover_listener&) = delete;
    handover_listener(handover_listener&&) = delete;
    handover_listener& operator=(handover_listener&&) = delete;

    /// The first verified request, once (nullopt if none yet).
    [[nodiscard]] std::optional<accepted_handover> take();

    /// True once the session LISTENs (tests: a request sent before that is
    /// not heard).
    [[nodiscard]] bool listening() const noexcept;

private:
    struct state;
    std::shared_ptr<state> m_state; ///< shared with the thread, which may outlive this
};

} // namespace pglease
