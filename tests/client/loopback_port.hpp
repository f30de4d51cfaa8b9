/// @file loopback_port.hpp
/// @brief A loopback TCP port for connect tests without PostgreSQL: one
/// that listens and never answers (a stalled server: the kernel completes
/// the handshake, libpq waits for the reply to its startup packet), or one
/// with nothing there (refused).
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <string>

namespace pglease::test {

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

    /// The next connection a client made, accepted (-1 if none came
    /// within @p within); the caller closes it.
    [[nodiscard]] int accept_within(std::chrono::milliseconds within) const {
        pollfd p{m_fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(within.count())) <= 0)
            return -1;
        return ::accept(m_fd, nullptr, nullptr);
    }

    /// True if the client closed @p conn within @p within (what it sent
    /// before is read and dropped).
    [[nodiscard]] static bool closed_by_client(int conn, std::chrono::milliseconds within) {
        const auto until = std::chrono::steady_clock::now() + within;
        std::array<char, 512> sink{};
        for (;;) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                until - std::chrono::steady_clock::now());
            pollfd p{conn, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 0))) <= 0)
                return false;
            const ssize_t got = ::recv(conn, sink.data(), sink.size(), 0);
            if (got <= 0)
                return true; // end of stream, or reset
        }
    }

private:
    int m_fd = -1;
    int m_port = 0;
};

} // namespace pglease::test
