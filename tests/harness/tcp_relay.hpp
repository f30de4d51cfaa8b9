/// @file tcp_relay.hpp
/// @brief A slow link for network faults this kernel cannot make (no
/// netem): a TCP relay on loopback between a client and its server that
/// delays each direction (a fixed delay plus jitter, order kept, as TCP
/// keeps it) and holds it (a cut: nothing read, nothing delivered, the
/// sockets open and silent; what was in flight arrives after the heal).
/// Data a client sent before it closed is still delivered, as a network
/// delivers packets already on the wire.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace pglease_test {

class tcp_relay {
public:
    using ms = std::chrono::milliseconds;

    /// Listens on 127.0.0.1 (a free port) and relays each connection to
    /// @p host : @p port. Throws std::system_error if it cannot listen.
    tcp_relay(std::string host, int port);
    /// Closes every connection and stops the relay's thread.
    ~tcp_relay();
    tcp_relay(const tcp_relay&) = delete;
    tcp_relay& operator=(const tcp_relay&) = delete;
    tcp_relay(tcp_relay&&) = delete;
    tcp_relay& operator=(tcp_relay&&) = delete;

    /// The port clients connect to.
    [[nodiscard]] int port() const noexcept { return m_port; }

    /// Each chunk read from then on is delivered @p delay + a uniform
    /// [0, @p jitter] later (never before the chunk ahead of it).
    void set_delay(ms delay, ms jitter = ms{0});
    /// Holds the way to the server (@p up), back (@p down), or both.
    void cut(bool up, bool down);
    /// Ends any cut and any delay.
    void heal();
    /// Chunks held or delayed since the last call (a fault that hit).
    [[nodiscard]] std::int64_t take_slowed();
    /// Connections accepted so far.
    [[nodiscard]] std::int64_t accepted() const noexcept { return m_accepted.load(); }

private:
    struct state;
    void run();

    std::string m_host;
    int m_target_port;
    int m_listen_fd = -1;
    int m_port = 0;
    int m_wake[2] = {-1, -1};
    std::atomic<bool> m_stop{false};
    std::atomic<std::int64_t> m_accepted{0};
    std::mutex m_mu; ///< guards the settings below
    ms m_delay{0};
    ms m_jitter{0};
    bool m_cut_up = false;
    bool m_cut_down = false;
    std::int64_t m_slowed = 0;
    std::thread m_thread; ///< last: started once the rest is ready
};

} // namespace pglease_test
