/// @file connect_backoff.hpp
/// @brief Backing off connection attempts to a server that is too busy
/// to accept them (issue 27: the storm64 connection herd).
///
/// A connection attempt that libpq abandons at connect_timeout still costs
/// the server a backend start (fork, authentication) that produces no
/// session; so does one refused with "too many clients". Retrying such an
/// attempt at the retry period, from every client at once, feeds the very
/// overload that made it fail: measured on 2 cores, 450 attempts arrived
/// in one second while 1 session was set up. After such a failure the
/// next attempt to the same server (the same connection string, from any
/// pq_backend of the process: a fleet member that restarts its elector
/// remembers) waits an exponentially growing, jittered time. Attempts
/// that fail at once (connection refused, a server starting up or
/// shutting down) cost the server nothing and do not back off, so a
/// restart or failover is followed as fast as before.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <string>

namespace pglease::detail {

/// The pause before the next attempt after @p failures overloaded attempts
/// in a row (>= 1): min(@p cap, @p base x 2^(failures - 1)) scaled by
/// 0.5 + 0.5 x @p unit (@p unit in [0, 1): the jitter).
std::chrono::steady_clock::duration backoff_delay(int failures,
                                                  std::chrono::steady_clock::duration base,
                                                  std::chrono::steady_clock::duration cap,
                                                  double unit) noexcept;

/// True when @p message (libpq's, through libpqxx) says the attempt cost
/// the server a backend start without a session: libpq's "timeout
/// expired" (connect_timeout) or the server's "too many clients" /
/// reserved connection slots.
bool overloaded_attempt(const std::string& message) noexcept;

/// The backoff state per server (connection string), shared by every
/// pq_backend of the process. Thread-safe.
class connect_backoff {
public:
    using time_point = std::chrono::steady_clock::time_point;
    using duration = std::chrono::steady_clock::duration;

    /// The process-wide instance.
    static connect_backoff& shared();

    /// How long before an attempt to @p key may be made (zero: now).
    [[nodiscard]] duration wait_left(const std::string& key, time_point now) const;
    /// Consecutive overloaded attempts to @p key.
    [[nodiscard]] int failures(const std::string& key) const;
    /// An attempt to @p key failed; @p overloaded (overloaded_attempt())
    /// moves the next attempt to now + backoff_delay(..., @p base, @p cap).
    void failed(const std::string& key, time_point now, bool overloaded, duration base,
                duration cap);
    /// An attempt to @p key set up a session: no backoff any more.
    void succeeded(const std::string& key);

private:
    struct state {
        int failures = 0;
        time_point next{};
    };
    mutable std::mutex m_mutex;
    std::map<std::string, state> m_servers;
    std::mt19937_64 m_rng{std::random_device{}()};
};

} // namespace pglease::detail
