/// @file test_connect_backoff.cpp
/// @brief The connection herd's brake (issue 27): attempts that cost the
/// server a backend start without a session back off exponentially, with
/// jitter, per server, shared by every backend of the process; attempts
/// refused at once do not. The last two tests drive a real pq_backend
/// against a listener that never answers (no PostgreSQL needed).
#include "pglease/error.hpp"
#include "pglease/pq_backend.hpp"
#include "pq/connect_backoff.hpp"
#include "pq/conninfo.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace pglease::detail {
namespace {

using namespace std::chrono_literals;
using dur = std::chrono::steady_clock::duration;

TEST(connect_backoff, delay_doubles_from_the_base_up_to_the_cap_with_jitter_in_the_upper_half) {
    EXPECT_EQ(backoff_delay(1, 2s, 15s, 1.0), dur{2s});
    EXPECT_EQ(backoff_delay(1, 2s, 15s, 0.0), dur{1s});
    EXPECT_EQ(backoff_delay(2, 2s, 15s, 1.0), dur{4s});
    EXPECT_EQ(backoff_delay(3, 2s, 15s, 1.0), dur{8s});
    EXPECT_EQ(backoff_delay(4, 2s, 15s, 1.0), dur{15s});
    EXPECT_EQ(backoff_delay(40, 2s, 15s, 0.0), dur{7500ms});
    EXPECT_EQ(backoff_delay(0, 2s, 15s, 1.0), dur::zero());
    EXPECT_EQ(backoff_delay(3, 2s, 0s, 1.0), dur::zero()) << "cap 0: no backoff";
}

TEST(connect_backoff, only_attempts_that_cost_the_server_a_backend_count_as_overloaded) {
    EXPECT_TRUE(overloaded_attempt(
        "connection to server at \"127.0.0.1\", port 5432 failed: timeout expired\n"));
    EXPECT_TRUE(overloaded_attempt("FATAL:  sorry, too many clients already"));
    EXPECT_TRUE(overloaded_attempt(
        "FATAL:  remaining connection slots are reserved for non-replication superuser"));
    EXPECT_FALSE(overloaded_attempt("connection to server at \"127.0.0.1\", port 5432 failed: "
                                    "Connection refused"));
    EXPECT_FALSE(overloaded_attempt("FATAL:  the database system is starting up"));
}

TEST(connect_backoff, overloaded_failures_back_off_per_server_and_a_session_ends_it) {
    connect_backoff b;
    const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
    EXPECT_EQ(b.wait_left("a", t0), dur::zero());
    // Refused at once: no pause.
    b.failed("a", t0, false, 2s, 15s);
    EXPECT_EQ(b.wait_left("a", t0), dur::zero());
    EXPECT_EQ(b.failures("a"), 0);
    // Timed out: 1-2 s, then 2-4 s, then 4-8 s.
    b.failed("a", t0, true, 2s, 15s);
    EXPECT_GE(b.wait_left("a", t0), dur{1s});
    EXPECT_LE(b.wait_left("a", t0), dur{2s});
    EXPECT_EQ(b.wait_left("b", t0), dur::zero()) << "another server is not affected";
    const auto t1 = t0 + 2s;
    EXPECT_EQ(b.wait_left("a", t1), dur::zero());
    b.failed("a", t1, true, 2s, 15s);
    EXPECT_GE(b.wait_left("a", t1), dur{2s});
    EXPECT_LE(b.wait_left("a", t1), dur{4s});
    const auto t2 = t1 + 4s;
    b.failed("a", t2, true, 2s, 15s);
    EXPECT_GE(b.wait_left("a", t2), dur{4s});
    EXPECT_LE(b.wait_left("a", t2), dur{8s});
    EXPECT_EQ(b.failures("a"), 3);
    b.succeeded("a");
    EXPECT_EQ(b.wait_left("a", t2), dur::zero());
    EXPECT_EQ(b.failures("a"), 0);
}

TEST(connect_backoff, the_jitter_spreads_a_fleet_that_failed_at_the_same_moment) {
    // 64 clients (one state each, as 64 processes) time out at once: their
    // next attempts spread over the upper half of the backoff.
    const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
    dur lo = dur::max(), hi = dur::zero();
    for (int i = 0; i < 64; ++i) {
        connect_backoff b;
        b.failed("s", t0, true, 2s, 15s);
        const auto w = b.wait_left("s", t0);
        lo = std::min(lo, w);
        hi = std::max(hi, w);
    }
    EXPECT_GE(lo, dur{1s});
    EXPECT_LE(hi, dur{2s});
    EXPECT_GT(hi - lo, dur{500ms}) << "64 draws should spread over most of [1 s, 2 s]";
}

} // namespace
} // namespace pglease::detail

namespace pglease {
namespace {

using namespace std::chrono_literals;

/// A TCP listener on 127.0.0.1 that never accepts: the kernel completes
/// the handshake, libpq sends its startup packet and waits for an answer
/// that never comes (a server too busy to start a backend), until
/// connect_timeout. accepted() drains the queue: the connections made.
class silent_server {
public:
    silent_server() {
        m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (m_fd < 0 || ::bind(m_fd, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
            ::listen(m_fd, 16) != 0 ||
            ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
            throw std::runtime_error("silent_server: cannot listen");
        m_port = ntohs(a.sin_port);
    }
    ~silent_server() {
        for (const int c : m_accepted)
            ::close(c);
        ::close(m_fd);
    }
    silent_server(const silent_server&) = delete;
    silent_server& operator=(const silent_server&) = delete;
    silent_server(silent_server&&) = delete;
    silent_server& operator=(silent_server&&) = delete;

    [[nodiscard]] int port() const noexcept { return m_port; }
    /// Connections that arrived so far (each counted once).
    int accepted() {
        for (int c; (c = ::accept(m_fd, nullptr, nullptr)) >= 0;)
            m_accepted.push_back(c);
        return static_cast<int>(m_accepted.size());
    }

private:
    int m_fd = -1;
    int m_port = 0;
    std::vector<int> m_accepted;
};

TEST(connect_backoff,
     a_backend_backs_off_from_a_server_too_busy_to_answer_and_sends_nothing_meanwhile) {
    silent_server server;
    connection_options o;
    // A name of its own: the backoff is per connection string.
    o.conninfo = "host=127.0.0.1 port=" + std::to_string(server.port()) +
                 " connect_timeout=2 application_name=backoff-test-" + std::to_string(::getpid());
    o.listen = false;
    pq_backend first{o};
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW((void)first.status("x"), connection_lost);
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(took, 1500ms) << "the attempt should have waited for connect_timeout";
    EXPECT_EQ(server.accepted(), 1);

    // Another backend of the process, same server: it does not connect
    // before the backoff (1-2 s after a 2 s timeout) ends.
    pq_backend second{o};
    const auto t1 = std::chrono::steady_clock::now();
    try {
        (void)second.status("x");
        ADD_FAILURE() << "no server answered, the call should have failed";
    } catch (const connection_lost& e) {
        EXPECT_NE(std::string{e.what()}.find("backing off"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t1, 200ms) << "it must fail at once";
    EXPECT_EQ(server.accepted(), 1) << "nothing may reach the server while backing off";
}

TEST(connect_backoff, a_refused_connection_does_not_back_off) {
    // Port 1 on loopback: refused at once, which costs a server nothing.
    connection_options o;
    o.conninfo = "host=127.0.0.1 port=1 application_name=refused-test";
    o.listen = false;
    pq_backend db{o};
    for (int i = 0; i < 3; ++i) {
        try {
            (void)db.status("x");
            ADD_FAILURE() << "port 1 should refuse";
        } catch (const connection_lost& e) {
            EXPECT_EQ(std::string{e.what()}.find("backing off"), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(detail::connect_backoff::shared().failures(detail::build_conninfo(o)), 0);
}

} // namespace
} // namespace pglease
