/// @file test_pq_connect.cpp
/// @brief The connect that ends by a deadline (pq_connect.hpp), against a
/// loopback listener that accepts TCP but never answers (a stalled server:
/// the kernel completes the handshake, libpq waits for the reply to its
/// startup packet) and a closed port. No PostgreSQL needed.
#include "pq_connect.hpp"

#include <pqxx/except>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using detail::bounded_connection;

/// A loopback TCP socket on a free port: listening (never accepting), or
/// closed at once when @p listening is false (nothing there: refused).
class loopback_port {
public:
    explicit loopback_port(bool listening) {
        m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
        EXPECT_GE(m_fd, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        EXPECT_EQ(::bind(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        socklen_t len = sizeof a;
        EXPECT_EQ(::getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
        m_port = ntohs(a.sin_port);
        if (listening) {
            EXPECT_EQ(::listen(m_fd, 8), 0);
        } else {
            ::close(m_fd);
            m_fd = -1;
        }
    }
    ~loopback_port() {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    loopback_port(const loopback_port&) = delete;
    loopback_port& operator=(const loopback_port&) = delete;
    loopback_port(loopback_port&&) = delete;
    loopback_port& operator=(loopback_port&&) = delete;

    [[nodiscard]] std::string conninfo(const std::string& extra = {}) const {
        return "host=127.0.0.1 port=" + std::to_string(m_port) + " user=x dbname=x " + extra;
    }

private:
    int m_fd = -1;
    int m_port = 0;
};

/// How long constructing a bounded_connection took to fail, or -1 s if it
/// did not fail.
steady::duration time_to_fail(const std::string& conninfo, steady::time_point deadline) {
    const auto t0 = steady::now();
    try {
        bounded_connection c{conninfo, deadline};
    } catch (const pqxx::broken_connection&) {
        return steady::now() - t0;
    }
    return -1s;
}

TEST(pq_connect, a_stalled_server_is_given_up_at_the_deadline) {
    const loopback_port silent{true};
    // libpq's own connect_timeout (10 s here) would wait far longer.
    const auto took = time_to_fail(silent.conninfo("connect_timeout=10"), steady::now() + 300ms);
    EXPECT_GE(took, 250ms);
    EXPECT_LT(took, 1500ms);
}

TEST(pq_connect, the_conninfo_connect_timeout_still_applies_before_a_later_deadline) {
    const loopback_port silent{true};
    const auto took = time_to_fail(silent.conninfo("connect_timeout=2"), steady::now() + 30s);
    EXPECT_GE(took, 1900ms);
    EXPECT_LT(took, 5s);
}

TEST(pq_connect, a_refused_connect_fails_at_once_with_libpqs_message) {
    const loopback_port closed{false};
    const auto t0 = steady::now();
    try {
        bounded_connection c{closed.conninfo(), steady::now() + 5s};
        ADD_FAILURE() << "connected to a closed port";
    } catch (const pqxx::broken_connection& e) {
        EXPECT_NE(std::string{e.what()}.find("refused"), std::string::npos) << e.what();
    }
    EXPECT_LT(steady::now() - t0, 1s);
}

TEST(pq_connect, a_deadline_already_past_fails_at_once) {
    const loopback_port silent{true};
    const auto took = time_to_fail(silent.conninfo(), steady::now() - 1ms);
    EXPECT_GE(took, 0s);
    EXPECT_LT(took, 500ms);
}

} // namespace
} // namespace pglease::test
