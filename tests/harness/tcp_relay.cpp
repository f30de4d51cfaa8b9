/// @file tcp_relay.cpp
/// @brief One thread, poll(2): each connection is two ways (client to
/// server, back), each a queue of chunks stamped with the time they may
/// be delivered.
#include "tcp_relay.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <deque>
#include <list>
#include <random>
#include <system_error>
#include <utility>
#include <vector>

namespace pglease_test {
namespace {

using clock_type = std::chrono::steady_clock;

[[noreturn]] void fail(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

void non_blocking(int fd) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int connect_to(const std::string& host, int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    non_blocking(fd);
    return fd;
}

struct chunk {
    clock_type::time_point due;
    std::string bytes;
    std::size_t sent = 0;
};

/// One direction of a connection.
struct way {
    int from = -1;
    int to = -1;
    std::deque<chunk> queue;
    std::size_t queued = 0;
    clock_type::time_point last_due{};
    bool eof = false;  ///< the sender closed (or failed)
    bool shut = false; ///< and everything it sent was delivered
};

constexpr std::size_t max_queued = 1 << 20;

} // namespace

struct tcp_relay::state {
    struct conn {
        way up;   ///< client to server
        way down; ///< server to client
    };
    std::list<conn> conns;
    std::mt19937 rng{std::random_device{}()};
};

tcp_relay::tcp_relay(std::string host, int port)
    : m_host(std::move(host))
    , m_target_port(port) {
    m_listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (m_listen_fd < 0)
        fail("tcp_relay: socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(m_listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(m_listen_fd, 64) != 0 ||
        ::getsockname(m_listen_fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
        ::pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        const int e = errno;
        ::close(m_listen_fd);
        errno = e;
        fail("tcp_relay: listen");
    }
    m_port = ntohs(a.sin_port);
    non_blocking(m_listen_fd);
    m_thread = std::thread([this] { run(); });
}

tcp_relay::~tcp_relay() {
    m_stop = true;
    const char c = 'x';
    (void)!::write(m_wake[1], &c, 1);
    m_thread.join();
    ::close(m_listen_fd);
    ::close(m_wake[0]);
    ::close(m_wake[1]);
}

void tcp_relay::set_delay(ms delay, ms jitter) {
    const std::lock_guard lock{m_mu};
    m_delay = delay;
    m_jitter = jitter;
}

void tcp_relay::cut(bool up, bool down) {
    {
        const std::lock_guard lock{m_mu};
        m_cut_up = up;
        m_cut_down = down;
    }
    const char c = 'c';
    (void)!::write(m_wake[1], &c, 1);
}

void tcp_relay::heal() {
    {
        const std::lock_guard lock{m_mu};
        m_cut_up = m_cut_down = false;
        m_delay = m_jitter = ms{0};
    }
    const char c = 'h';
    (void)!::write(m_wake[1], &c, 1);
}

std::int64_t tcp_relay::take_slowed() {
    const std::lock_guard lock{m_mu};
    return std::exchange(m_slowed, 0);
}

void tcp_relay::run() {
    state st;
    std::vector<pollfd> fds;
    std::array<char, 65536> buf{};
    while (!m_stop) {
        ms delay;
        ms jitter;
        std::array<bool, 2> cut{};
        {
            const std::lock_guard lock{m_mu};
            delay = m_delay;
            jitter = m_jitter;
            cut = {m_cut_up, m_cut_down};
        }
        const auto now = clock_type::now();
        std::int64_t slowed = 0;
        // What each way waits for: input unless held (or too much queued),
        // output once its first chunk is due and it is not held.
        fds.assign({{m_wake[0], POLLIN, 0}, {m_listen_fd, POLLIN, 0}});
        auto next = now + ms{50};
        for (auto& c : st.conns)
            for (int i = 0; i < 2; ++i) {
                way& w = i == 0 ? c.up : c.down;
                short in = 0;
                short out = 0;
                if (cut[static_cast<std::size_t>(i)]) {
                    int pending = 0;
                    if (!w.queue.empty() ||
                        (!w.eof && ::ioctl(w.from, FIONREAD, &pending) == 0 && pending > 0))
                        ++slowed;
                } else {
                    if (!w.eof && w.queued < max_queued)
                        in = POLLIN;
                    if (!w.queue.empty()) {
                        if (w.queue.front().due <= now)
                            out = POLLOUT;
                        else
                            next = std::min(next, w.queue.front().due);
                    }
                }
                // (a negative fd is skipped: no POLLHUP from a way at rest)
                fds.push_back({in != 0 ? w.from : -1, in, 0});
                fds.push_back({out != 0 ? w.to : -1, out, 0});
            }
        const auto wait = std::chrono::ceil<ms>(next - now).count();
        if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(wait, 0))) < 0 &&
            errno != EINTR)
            break;
        if ((fds[0].revents & POLLIN) != 0)
            while (::read(m_wake[0], buf.data(), buf.size()) > 0) {
            }
        std::size_t k = 2;
        const auto t = clock_type::now();
        for (auto& c : st.conns)
            for (int i = 0; i < 2; ++i, k += 2) {
                way& w = i == 0 ? c.up : c.down;
                if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
                    const auto n = ::read(w.from, buf.data(), buf.size());
                    if (n > 0) {
                        auto due = t + delay;
                        if (jitter.count() > 0)
                            due += ms{std::uniform_int_distribution<long long>{0, jitter.count()}(
                                st.rng)};
                        due = std::max(due, w.last_due);
                        w.last_due = due;
                        if (delay.count() > 0 || jitter.count() > 0)
                            ++slowed;
                        w.queue.push_back(
                            {due, std::string(buf.data(), static_cast<std::size_t>(n))});
                        w.queued += static_cast<std::size_t>(n);
                    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                        w.eof = true;
                    }
                }
                if ((fds[k + 1].revents & POLLOUT) != 0 && !w.queue.empty()) {
                    chunk& h = w.queue.front();
                    const auto n = ::send(w.to, h.bytes.data() + h.sent, h.bytes.size() - h.sent,
                                          MSG_NOSIGNAL);
                    if (n > 0) {
                        h.sent += static_cast<std::size_t>(n);
                        if (h.sent == h.bytes.size()) {
                            w.queued -= h.bytes.size();
                            w.queue.pop_front();
                        }
                    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        // the receiver is gone: this way can deliver nothing more
                        w.queue.clear();
                        w.queued = 0;
                        w.eof = true;
                    }
                }
                if (w.eof && w.queue.empty() && !w.shut) {
                    ::shutdown(w.to, SHUT_WR);
                    w.shut = true;
                }
            }
        if ((fds[1].revents & POLLIN) != 0) {
            const int client = ::accept4(m_listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (client >= 0) {
                const int server = connect_to(m_host, m_target_port);
                if (server < 0) {
                    ::close(client);
                } else {
                    non_blocking(client);
                    auto& c = st.conns.emplace_back();
                    c.up.from = c.down.to = client;
                    c.up.to = c.down.from = server;
                    ++m_accepted;
                }
            }
        }
        if (slowed > 0) {
            const std::lock_guard lock{m_mu};
            m_slowed += slowed;
        }
        st.conns.remove_if([](state::conn& c) {
            if (!(c.up.shut && c.down.shut))
                return false;
            ::close(c.up.from);
            ::close(c.up.to);
            return true;
        });
    }
    for (auto& c : st.conns) {
        ::close(c.up.from);
        ::close(c.up.to);
    }
}

} // namespace pglease_test
