/// @file test_tcp_relay.cpp
/// @brief The slow link (tests/harness/tcp_relay.hpp) against an echo
/// server of the test's own: it relays unchanged, delays by what it is
/// told, holds a cut way and delivers what was held after the heal, and
/// still delivers what a client sent before it closed.
#include "tcp_relay.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

namespace {

using pglease_test::tcp_relay;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

/// Echoes every byte back; counts what it received.
class echo_server {
public:
    echo_server() {
        m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        EXPECT_EQ(::bind(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        EXPECT_EQ(::listen(m_fd, 8), 0);
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &len);
        m_port = ntohs(a.sin_port);
        m_thread = std::thread([this] {
            const int c = ::accept(m_fd, nullptr, nullptr);
            if (c < 0)
                return;
            char buf[4096];
            for (;;) {
                const auto n = ::read(c, buf, sizeof buf);
                if (n <= 0)
                    break;
                m_received += static_cast<int>(n);
                (void)!::write(c, buf, static_cast<std::size_t>(n));
            }
            ::close(c);
        });
    }
    ~echo_server() {
        ::shutdown(m_fd, SHUT_RDWR);
        m_thread.join();
        ::close(m_fd);
    }
    echo_server(const echo_server&) = delete;
    echo_server& operator=(const echo_server&) = delete;
    echo_server(echo_server&&) = delete;
    echo_server& operator=(echo_server&&) = delete;

    [[nodiscard]] int port() const { return m_port; }
    [[nodiscard]] int received() const { return m_received.load(); }

private:
    int m_fd = -1;
    int m_port = 0;
    std::atomic<int> m_received{0};
    std::thread m_thread;
};

int dial(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
}

/// Reads @p n bytes within @p bound; what arrived.
std::string read_for(int fd, std::size_t n, milliseconds bound) {
    std::string got;
    const auto end = clock_type::now() + bound;
    while (got.size() < n) {
        const auto left = std::chrono::duration_cast<milliseconds>(end - clock_type::now()).count();
        pollfd p{fd, POLLIN, 0};
        if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0)
            break;
        char buf[4096];
        const auto r = ::read(fd, buf, sizeof buf);
        if (r <= 0)
            break;
        got.append(buf, static_cast<std::size_t>(r));
    }
    return got;
}

/// Milliseconds for @p msg to go round through the relay.
long long round_trip(int fd, const std::string& msg) {
    const auto t = clock_type::now();
    EXPECT_EQ(::write(fd, msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
    EXPECT_EQ(read_for(fd, msg.size(), milliseconds{10000}), msg);
    return std::chrono::duration_cast<milliseconds>(clock_type::now() - t).count();
}

TEST(tcp_relay, relays_unchanged_and_fast_when_told_nothing) {
    echo_server echo;
    tcp_relay relay{"127.0.0.1", echo.port()};
    const int fd = dial(relay.port());
    EXPECT_LT(round_trip(fd, "hello"), 3000); // (generous: a loaded machine)
    EXPECT_EQ(relay.accepted(), 1);
    EXPECT_EQ(relay.take_slowed(), 0);
    ::close(fd);
}

TEST(tcp_relay, delays_each_way) {
    echo_server echo;
    tcp_relay relay{"127.0.0.1", echo.port()};
    const int fd = dial(relay.port());
    relay.set_delay(milliseconds{200}, milliseconds{100});
    // 200-300 ms there and 200-300 ms back: at least 400 ms
    EXPECT_GE(round_trip(fd, "slow"), 400);
    EXPECT_GT(relay.take_slowed(), 0);
    relay.heal();
    EXPECT_LT(round_trip(fd, "fast"), 3000);
    ::close(fd);
}

TEST(tcp_relay, holds_a_cut_way_and_delivers_after_the_heal) {
    echo_server echo;
    tcp_relay relay{"127.0.0.1", echo.port()};
    const int fd = dial(relay.port());
    relay.cut(true, false);
    ASSERT_EQ(::write(fd, "held", 4), 4);
    EXPECT_EQ(read_for(fd, 4, milliseconds{500}), "");
    EXPECT_EQ(echo.received(), 0);
    EXPECT_GT(relay.take_slowed(), 0);
    relay.heal();
    EXPECT_EQ(read_for(fd, 4, milliseconds{10000}), "held");
    // cut on the way back: the server gets it, the client does not
    relay.cut(false, true);
    ASSERT_EQ(::write(fd, "back", 4), 4);
    EXPECT_EQ(read_for(fd, 4, milliseconds{500}), "");
    // retry the observation, not the assertion
    for (int i = 0; i < 100 && echo.received() < 8; ++i)
        std::this_thread::sleep_for(milliseconds{50});
    EXPECT_EQ(echo.received(), 8);
    relay.heal();
    EXPECT_EQ(read_for(fd, 4, milliseconds{10000}), "back");
    ::close(fd);
}

TEST(tcp_relay, delivers_what_a_closed_client_sent) {
    echo_server echo;
    tcp_relay relay{"127.0.0.1", echo.port()};
    const int fd = dial(relay.port());
    relay.set_delay(milliseconds{300});
    ASSERT_EQ(::write(fd, "last words", 10), 10);
    ::close(fd);
    // retry the observation, not the assertion
    for (int i = 0; i < 100 && echo.received() < 10; ++i)
        std::this_thread::sleep_for(milliseconds{50});
    EXPECT_EQ(echo.received(), 10);
}

} // namespace
