/// @file wire_counter.hpp
/// @brief A loopback relay in front of the test server that counts the
/// round trips a client makes: the simple-query messages (Query) and the
/// ends of extended-protocol exchanges (Sync) it sends. It reads the wire,
/// so it needs no access to libpq's handle (which libpqxx 7 and 8 do not
/// give) and counts the same on every libpqxx version.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pglease::test {

class wire_counter {
public:
    /// Relays one client connection to the server at 127.0.0.1:@p port.
    explicit wire_counter(int port)
        : m_upstream_port{port} {
        m_listen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (m_listen < 0 || ::bind(m_listen, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::listen(m_listen, 1) != 0 ||
            ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&a), &len) != 0)
            throw std::runtime_error{"wire_counter: cannot listen"};
        m_port = ntohs(a.sin_port);
        ::pipe(m_stop.data());
        m_thread = std::thread{[this] { run(); }};
    }
    wire_counter(const wire_counter&) = delete;
    wire_counter& operator=(const wire_counter&) = delete;
    wire_counter(wire_counter&&) = delete;
    wire_counter& operator=(wire_counter&&) = delete;
    ~wire_counter() {
        (void)::write(m_stop[1], "x", 1);
        m_thread.join();
        for (int fd : {m_listen, m_stop[0], m_stop[1]})
            ::close(fd);
    }

    /// A conninfo that reaches the server through this relay, without TLS
    /// or GSS negotiation (so the first message is the startup packet).
    [[nodiscard]] std::string conninfo() const {
        return "host=127.0.0.1 port=" + std::to_string(m_port) +
               " sslmode=disable gssencmode=disable";
    }

    /// Round trips sent since the last reset().
    [[nodiscard]] int round_trips() const noexcept { return m_count.load(); }
    /// The text of the queries (Query, Parse) sent since the last reset().
    [[nodiscard]] std::string log() const {
        const std::lock_guard lock{m_mutex};
        return m_log;
    }
    void reset() {
        const std::lock_guard lock{m_mutex};
        m_count.store(0);
        m_log.clear();
    }

private:
    void run() {
        pollfd accept_fds[2] = {{m_listen, POLLIN, 0}, {m_stop[0], POLLIN, 0}};
        if (::poll(accept_fds, 2, 30000) <= 0 || (accept_fds[1].revents & POLLIN) != 0)
            return;
        const int client = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
        const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(m_upstream_port));
        if (client >= 0 && server >= 0 &&
            ::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0)
            relay(client, server);
        ::close(client);
        ::close(server);
    }

    void relay(int client, int server) {
        std::array<char, 65536> buf{};
        for (;;) {
            pollfd fds[3] = {{client, POLLIN, 0}, {server, POLLIN, 0}, {m_stop[0], POLLIN, 0}};
            if (::poll(fds, 3, -1) < 0 || (fds[2].revents & POLLIN) != 0)
                return;
            for (int i = 0; i < 2; ++i) {
                if (fds[i].revents == 0)
                    continue;
                const ssize_t n = ::read(fds[i].fd, buf.data(), buf.size());
                if (n <= 0)
                    return;
                if (i == 0)
                    parse(buf.data(), static_cast<std::size_t>(n));
                for (ssize_t off = 0; off < n;) {
                    const ssize_t w =
                        ::write(fds[1 - i].fd, buf.data() + off, static_cast<std::size_t>(n - off));
                    if (w <= 0)
                        return;
                    off += w;
                }
            }
        }
    }

    /// The frontend stream: an untyped startup packet, then messages of a
    /// type byte and a length (which counts itself, not the type).
    void parse(const char* data, std::size_t n) {
        m_pending.insert(m_pending.end(), data, data + n);
        for (;;) {
            const std::size_t head = m_started ? 5 : 4;
            if (m_pending.size() < head)
                return;
            const auto* p = reinterpret_cast<const unsigned char*>(m_pending.data()) + head - 4;
            const std::size_t len = (std::size_t{p[0]} << 24) | (std::size_t{p[1]} << 16) |
                                    (std::size_t{p[2]} << 8) | std::size_t{p[3]};
            const std::size_t whole = head - 4 + len;
            if (m_pending.size() < whole)
                return;
            if (!m_started) {
                m_started = true;
            } else {
                const std::lock_guard lock{m_mutex};
                const char type = m_pending[0];
                if (type == 'Q' || type == 'S')
                    ++m_count;
                if (type == 'Q' || type == 'P')
                    m_log += std::string{type} + " " +
                             std::string{m_pending.data() + 5, whole - 5} + "\n";
            }
            m_pending.erase(m_pending.begin(),
                            m_pending.begin() + static_cast<std::ptrdiff_t>(whole));
        }
    }

    int m_upstream_port;
    int m_listen = -1;
    int m_port = 0;
    std::array<int, 2> m_stop{-1, -1};
    std::thread m_thread;
    std::vector<char> m_pending;
    bool m_started = false;
    std::atomic<int> m_count{0};
    mutable std::mutex m_mutex;
    std::string m_log;
};

} // namespace pglease::test
