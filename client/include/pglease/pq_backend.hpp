/// @file pq_backend.hpp
/// @brief The real backend: the pg_lease SQL API over one libpqxx connection.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/connection_options.hpp"

#include "pglease/internal/installation.hpp"

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace pglease {

namespace detail {
class call_watchdog;
struct pq_statements;
struct statement;
} // namespace detail

/// One database session speaking the pg_lease SQL API (SPEC section 3).
///
/// The session is opened lazily and replaced after it breaks: a call that
/// finds the connection broken throws connection_lost and drops it, and the
/// next call connects afresh (bounded by connect_timeout). Reconnecting never
/// restores anything by itself: a lease is held again only after a renew of
/// the same epoch succeeds on the new session.
///
/// Every call returns or fails by its bound (see connection_options): past
/// it a cancel request is sent, and if the reply still does not come the
/// connection is shut down; a watchdog thread does both, so a call in time
/// costs no extra round trip.
///
/// Each statement is prepared once per session, at first use; behind a
/// transaction-mode pooler, where that does not hold, the session falls
/// back to unnamed statements (see docs/cpp.md).
///
/// Waiting uses LISTEN pg_lease and poll(2) on the connection's socket plus
/// a self-pipe for interrupt(): no busy polling, and another thread can wake
/// the waiter at once.
///
/// @code
///   pglease::pq_backend db{{}};            // PG* environment variables
///   auto reply = db.acquire("jobs", "me", std::chrono::seconds{15});
/// @endcode
class pq_backend final : public backend {
public:
    /// Stores the options; does not connect yet.
    explicit pq_backend(connection_options options);
    ~pq_backend() override;
    pq_backend(const pq_backend&) = delete;
    pq_backend& operator=(const pq_backend&) = delete;
    pq_backend(pq_backend&&) = delete;
    pq_backend& operator=(pq_backend&&) = delete;

    using backend::acquire;
    using backend::acquire_many;

    /// A lock delay of zero sends the three-argument lease_acquire (every
    /// extension version has it), else the four-argument one (1.1 and later).
    acquire_reply acquire(const std::string& name, const std::string& holder,
                          std::chrono::milliseconds ttl, std::chrono::milliseconds lock_delay,
                          clock::time_point deadline) override;
    std::optional<std::chrono::microseconds> renew(const std::string& name,
                                                   const std::string& holder, std::int64_t epoch,
                                                   std::chrono::milliseconds ttl,
                                                   clock::time_point deadline) override;
    bool release(const std::string& name, const std::string& holder, std::int64_t epoch) override;
    bool revoke(const std::string& name) override;
    std::optional<std::int64_t> handover(const std::string& name, const std::string& holder,
                                         std::int64_t epoch, const std::string& successor) override;
    std::optional<lease_record> status(const std::string& name) override;
    std::optional<lease_record> status_if_durable(const std::string& name) override;
    bool listen() override;
    void unlisten() noexcept override;
    bool wait_for_change(const std::string& name, clock::time_point until) noexcept override;
    void interrupt() noexcept override;
    bool take_handover_hint(const std::string& name, const std::string& holder) noexcept override;
    /// One lease_renew_many() statement: one round trip, one commit.
    std::vector<std::optional<std::chrono::microseconds>>
    renew_many(const std::vector<std::string>& names, const std::string& holder,
               const std::vector<std::int64_t>& epochs, std::chrono::milliseconds ttl,
               clock::time_point deadline) override;
    /// The most names one acquire_many or release_many statement carries.
    /// A change of holder holds the ending grant's fence lock, one entry of
    /// the server's shared lock table, until its commit, and PostgreSQL
    /// sizes that table for max_locks_per_transaction (64 by default) per
    /// session: 100 sets granting 1,000 leases each in one statement filled
    /// it, and every session's next lock failed ("out of shared memory"),
    /// connections included.
    static constexpr std::size_t names_per_statement = 64;

    /// Statements over unnest(names) with lease_acquire, names_per_statement
    /// names each, one after another; one round trip and one commit each;
    /// the whole call bounded by acquire_timeout and @p deadline.
    std::vector<acquire_reply> acquire_many(const std::vector<std::string>& names,
                                            const std::string& holder,
                                            std::chrono::milliseconds ttl,
                                            std::chrono::milliseconds lock_delay,
                                            clock::time_point deadline) override;
    /// Statements over unnest(names, epochs) with lease_release,
    /// names_per_statement names each, as acquire_many; the whole call
    /// bounded by acquire_timeout and @p deadline.
    std::vector<bool> release_many(const std::vector<std::string>& names, const std::string& holder,
                                   const std::vector<std::int64_t>& epochs,
                                   clock::time_point deadline) override;
    std::vector<lease_record> list(const std::string& prefix) override;
    bool wait_for_prefix(const std::string& prefix, clock::time_point until) noexcept override;
    bool wait_for_free(const std::set<std::string>& names, clock::time_point until,
                       std::vector<std::string>& freed) noexcept override;
    /// Cached on the session: one round trip per connection.
    std::string store_id(clock::time_point deadline) override;
    /// Which edition of pg_lease the server has (C or SQL), its version and
    /// schema, and the server's version: one or two statements, bounded by
    /// call_timeout and @p deadline. Throws pglease::error (SQLSTATE 42P01)
    /// when no pg_lease is installed where the calls would find it.
    [[nodiscard]] pglease::installation
    installation(clock::time_point deadline = clock::time_point::max());
    /// Bounded by acquire_timeout (it may wait for a downstream's old
    /// writers, as a takeover does) and @p deadline, on both sides: the
    /// connect (opened lazily, reopened after a failure) ends by then, and
    /// the statement carries its own statement_timeout to that instant, so
    /// the server stops waiting (and ending old writers) when the caller
    /// gave up. One round trip: `SET LOCAL statement_timeout = ...;
    /// SELECT lease_raise(...)` in one message, one implicit transaction.
    /// A session found dead at the raise (it died while idle) is replaced
    /// once, within the same deadline: a raise is idempotent.
    bool raise(const std::string& store, const std::string& name, std::int64_t epoch,
               clock::time_point deadline) override;

    /// Connects now if not connected (throws connection_lost on failure).
    void connect();

    /// True while a session is open (no I/O).
    [[nodiscard]] bool connected() const noexcept;

    /// The server process id of the current session, 0 when not connected.
    /// Tests use it to pg_terminate_backend() this very session.
    [[nodiscard]] int server_pid() const noexcept;

    /// The options this backend was built with.
    [[nodiscard]] const connection_options& options() const noexcept { return m_options; }

private:
    struct session;
    class wakeup;

    /// The open session, or a new one whose connect ends by @p connect_by
    /// (time_point::max(): libpq's connect_timeout alone).
    session& live(clock::time_point connect_by = clock::time_point::max());
    void drop() noexcept;
    template <typename F>
    auto call(const char* what, clock::time_point deadline, F&& body);
    /// status() and status_if_durable(): @p st's lease_status row of @p name.
    std::optional<lease_record> read_status(const detail::statement& st, const std::string& name);
    /// The wait of wait_for_change(), wait_for_prefix() and
    /// wait_for_free(): @p consume
    /// takes the matching names out of m_changed.
    template <typename Consume>
    bool wait_until_event(Consume&& consume, clock::time_point until) noexcept;

    connection_options m_options;
    std::string m_conninfo;
    std::unique_ptr<wakeup> m_wakeup;
    std::unique_ptr<detail::call_watchdog> m_watchdog;
    std::unique_ptr<const detail::pq_statements> m_sql; ///< built once: the schema is fixed
    std::shared_ptr<session> m_session;                 ///< shared with a cancel request in flight
    bool m_listen_wanted = false;
    /// Names seen in notifications not consumed yet; "*" = unparsable payload.
    std::set<std::string> m_changed;
    std::set<std::string> m_freed; ///< released or revoked: wait_for_free()
    /// lease -> the successor its latest event handed it to (take_handover_hint)
    std::map<std::string, std::string> m_handed;
};

} // namespace pglease
