/// @file test_pq_connect.cpp
/// @brief The connect that ends by a deadline (pq_connect.hpp), against a
/// loopback listener that accepts TCP but never answers (a stalled server:
/// the kernel completes the handshake, libpq waits for the reply to its
/// startup packet), a closed port, and a server that freezes right after
/// the handshake (pq_backend's session setup keeps the deadline). No
/// PostgreSQL needed.
#include "pglease/error.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include "loopback_port.hpp"

#include <pqxx/except>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

/// How long a bounded connect (pqxx_compat::connect_bounded) took to fail, or -1 s if it
/// did not fail.
steady::duration time_to_fail(const std::string& conninfo, steady::time_point deadline,
                              int stop_fd = -1) {
    const auto t0 = steady::now();
    try {
        [[maybe_unused]] const auto c = pqxx_compat::connect_bounded(conninfo, deadline, stop_fd);
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

TEST(pq_connect, a_connect_without_a_deadline_is_abandoned_once_its_stop_descriptor_is_readable) {
    const loopback_port silent{true};
    int stop[2] = {-1, -1};
    ASSERT_EQ(::pipe(stop), 0);
    std::thread stopper{[&stop] {
        std::this_thread::sleep_for(200ms);
        const char b = 1;
        EXPECT_EQ(::write(stop[1], &b, 1), 1);
    }};
    const auto took =
        time_to_fail(silent.conninfo("connect_timeout=10"), steady::time_point::max(), stop[0]);
    stopper.join();
    ::close(stop[0]);
    ::close(stop[1]);
    EXPECT_GE(took, 150ms);
    EXPECT_LT(took, 3s) << "the connect waited for libpq's connect_timeout, not the stop";
}

TEST(pq_connect, a_call_that_must_connect_first_ends_by_its_deadline) {
    const loopback_port silent{true};
    connection_options o;
    o.conninfo = silent.conninfo("connect_timeout=10");
    pq_backend db{o};
    const auto t0 = steady::now();
    EXPECT_THROW((void)db.renew("l", "me", 1, 10s, t0 + 300ms), error);
    const auto took = steady::now() - t0;
    EXPECT_GE(took, 250ms);
    EXPECT_LT(took, 1500ms) << "the connect ignored the call's deadline";
}

TEST(pq_connect, a_refused_connect_fails_at_once_with_libpqs_message) {
    const loopback_port closed{false};
    const auto t0 = steady::now();
    try {
        [[maybe_unused]] const auto c =
            pqxx_compat::connect_bounded(closed.conninfo(), steady::now() + 5s);
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

/// A server that completes the protocol handshake (no TLS, trust), then
/// freezes: it never answers a query. It lets go of the connection when the
/// client closes it or after @p hold.
class frozen_after_handshake {
public:
    explicit frozen_after_handshake(std::chrono::milliseconds hold) {
        m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        EXPECT_EQ(::bind(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        EXPECT_EQ(::getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
        EXPECT_EQ(::listen(m_fd, 8), 0);
        m_port = ntohs(a.sin_port);
        m_thread = std::thread{[this, hold] { serve(steady::now() + hold); }};
    }
    ~frozen_after_handshake() {
        m_thread.join();
        ::close(m_fd);
    }
    frozen_after_handshake(const frozen_after_handshake&) = delete;
    frozen_after_handshake& operator=(const frozen_after_handshake&) = delete;
    frozen_after_handshake(frozen_after_handshake&&) = delete;
    frozen_after_handshake& operator=(frozen_after_handshake&&) = delete;

    [[nodiscard]] std::string conninfo() const {
        return "host=127.0.0.1 port=" + std::to_string(m_port) +
               " user=x dbname=x sslmode=disable gssencmode=disable";
    }

private:
    static bool wait_readable(int fd, steady::time_point until) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - steady::now());
        pollfd p{fd, POLLIN, 0};
        return left.count() > 0 && ::poll(&p, 1, static_cast<int>(left.count())) > 0;
    }
    static bool read_exactly(int fd, void* buf, std::size_t n, steady::time_point until) {
        auto* out = static_cast<char*>(buf);
        while (n > 0) {
            if (!wait_readable(fd, until))
                return false;
            const ssize_t got = ::recv(fd, out, n, 0);
            if (got <= 0)
                return false;
            out += got;
            n -= static_cast<std::size_t>(got);
        }
        return true;
    }
    static void put32(std::vector<char>& m, std::uint32_t v) {
        v = htonl(v);
        const auto* b = reinterpret_cast<const char*>(&v);
        m.insert(m.end(), b, b + 4);
    }
    static void message(std::vector<char>& out, char type, const std::string& body) {
        out.push_back(type);
        put32(out, static_cast<std::uint32_t>(body.size() + 4));
        out.insert(out.end(), body.begin(), body.end());
    }
    static std::string parameter(const std::string& name, const std::string& value) {
        return name + std::string(1, '\0') + value + std::string(1, '\0');
    }

    void serve(steady::time_point until) {
        if (!wait_readable(m_fd, until))
            return;
        const int c = ::accept(m_fd, nullptr, nullptr);
        if (c < 0)
            return;
        std::uint32_t len = 0;
        if (read_exactly(c, &len, 4, until)) {
            std::vector<char> startup(ntohl(len) - 4);
            if (read_exactly(c, startup.data(), startup.size(), until)) {
                std::vector<char> out;
                message(out, 'R', std::string(4, '\0')); // AuthenticationOk
                message(out, 'S', parameter("server_version", "15.0"));
                message(out, 'S', parameter("client_encoding", "UTF8"));
                message(out, 'S', parameter("standard_conforming_strings", "on"));
                message(out, 'S', parameter("integer_datetimes", "on"));
                message(out, 'K', std::string(8, '\1')); // BackendKeyData
                message(out, 'Z', "I");                  // ReadyForQuery
                EXPECT_EQ(::send(c, out.data(), out.size(), MSG_NOSIGNAL),
                          static_cast<ssize_t>(out.size()));
                // Frozen: read (and drop) whatever comes, answer nothing.
                std::array<char, 512> sink{};
                while (wait_readable(c, until) && ::recv(c, sink.data(), sink.size(), 0) > 0) {
                }
            }
        }
        ::close(c);
    }

    int m_fd = -1;
    int m_port = 0;
    std::thread m_thread;
};

TEST(pq_connect, a_server_frozen_after_the_handshake_holds_a_raise_no_longer_than_its_deadline) {
    const frozen_after_handshake server{6s};
    connection_options o;
    o.conninfo = server.conninfo();
    pq_backend down{o};
    const auto t0 = steady::now();
    EXPECT_THROW((void)down.raise("store", "lease", 1, t0 + 500ms), error);
    const auto took = steady::now() - t0;
    EXPECT_GE(took, 450ms);
    EXPECT_LT(took, 2s) << "the session's setup outlived the raise's deadline";
}

} // namespace
} // namespace pglease::test
