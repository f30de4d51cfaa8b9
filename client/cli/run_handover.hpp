/// @file run_handover.hpp
/// @brief `pglease run`'s planned handover: the new instance asks
/// (--take-over), the holder checks who asked and hands its lease over
/// after its job is gone.
///
/// Protocol (no extension change; the channel is not pg_lease):
///  1. The requester (`run --take-over`), finding the lease held, sends
///     NOTIFY pg_lease_handover '{"lease":L,"requester":ID}' from a session
///     of its own that stays open while it waits.
///  2. Every holder (`run` without --no-handover) LISTENs on that channel on
///     a session of its own. Anyone can NOTIFY, so a request for its lease
///     counts only if the sending backend (the notification's pid) is still
///     connected and logged in as the holder's own role, or as a superuser:
///     the roles that lease_handover() itself would accept. Others are
///     ignored and logged.
///  3. The holder stops its job (SIGTERM to the group, SIGKILL after
///     --kill-after), stops renewing, calls lease_handover(L, me, epoch, ID)
///     and exits 0; the requester wakes on the handover event (NOTIFY
///     pg_lease), acquires (same epoch) and starts its job.
/// A holder that does not understand the request keeps the lease; the
/// requester waits as usual.
#pragma once

#include "handover_request.hpp"

#include <pqxx/pqxx>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace pglease::cli {

/// The requester's side: one session that sends requests and stays open.
class takeover_requester {
public:
    takeover_requester(std::string conninfo, handover_request request)
        : m_conninfo{std::move(conninfo)}
        , m_request{std::move(request)} {}

    /// Sends the request (connecting first if needed). False, with the
    /// reason in @p error, when it could not be sent.
    bool ask(std::string& error);

private:
    std::string m_conninfo;
    handover_request m_request;
    std::unique_ptr<pqxx::connection> m_conn;
};

/// A request that passed the checks.
struct accepted_request {
    std::string requester;
    int pid = 0;      ///< the backend that sent it
    std::string role; ///< its login role
};

/// The holder's side: LISTENs on its own session and thread; verified
/// requests for @p lease are kept for take() and announced by waking the
/// supervisor's main thread (run_signals::wake_main(handover_byte)).
class handover_listener {
public:
    /// Connects and LISTENs (throws on failure); @p log prints a line.
    handover_listener(const std::string& conninfo, std::string lease, std::string own_identity,
                      std::function<void(const std::string&)> log);
    ~handover_listener();
    handover_listener(const handover_listener&) = delete;
    handover_listener& operator=(const handover_listener&) = delete;
    handover_listener(handover_listener&&) = delete;
    handover_listener& operator=(handover_listener&&) = delete;

    /// The first verified request, once (nullopt if none).
    [[nodiscard]] std::optional<accepted_request> take();

private:
    void run() noexcept;
    void check(const std::string& payload, int pid);

    std::string m_lease;
    std::string m_identity;
    std::function<void(const std::string&)> m_log;
    pqxx::connection m_conn;
    std::vector<std::pair<std::string, int>> m_inbox; ///< filled by get_notifs()
    std::unique_ptr<pqxx::notification_receiver> m_receiver;
    int m_stop[2] = {-1, -1}; ///< self-pipe: the destructor wakes the thread
    std::mutex m_mutex;
    std::optional<accepted_request> m_accepted; ///< guarded by m_mutex
    bool m_taken = false;                       ///< guarded by m_mutex
    std::thread m_thread;
};

} // namespace pglease::cli
