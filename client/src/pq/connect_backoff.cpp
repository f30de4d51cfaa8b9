/// @file connect_backoff.cpp
/// @brief Backing off connection attempts to an overloaded server.
#include "pq/connect_backoff.hpp"

#include <algorithm>

namespace pglease::detail {

std::chrono::steady_clock::duration backoff_delay(int failures,
                                                  std::chrono::steady_clock::duration base,
                                                  std::chrono::steady_clock::duration cap,
                                                  double unit) noexcept {
    if (failures < 1 || base <= std::chrono::steady_clock::duration::zero() ||
        cap <= std::chrono::steady_clock::duration::zero())
        return std::chrono::steady_clock::duration::zero();
    auto step = base;
    for (int i = 1; i < failures && step < cap; ++i)
        step *= 2;
    step = std::min(step, cap);
    const double scale = 0.5 + 0.5 * std::clamp(unit, 0.0, 1.0);
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(step * scale);
}

bool overloaded_attempt(const std::string& message) noexcept {
    return message.find("timeout expired") != std::string::npos ||
           message.find("too many clients") != std::string::npos ||
           message.find("remaining connection slots are reserved") != std::string::npos;
}

connect_backoff& connect_backoff::shared() {
    static connect_backoff instance;
    return instance;
}

connect_backoff::duration connect_backoff::wait_left(const std::string& key, time_point now) const {
    const std::lock_guard lock{m_mutex};
    const auto it = m_servers.find(key);
    if (it == m_servers.end() || it->second.next <= now)
        return duration::zero();
    return it->second.next - now;
}

int connect_backoff::failures(const std::string& key) const {
    const std::lock_guard lock{m_mutex};
    const auto it = m_servers.find(key);
    return it == m_servers.end() ? 0 : it->second.failures;
}

void connect_backoff::failed(const std::string& key, time_point now, bool overloaded, duration base,
                             duration cap) {
    if (!overloaded)
        return; // refused at once: cheap for the server, retry at the usual pace
    const std::lock_guard lock{m_mutex};
    state& s = m_servers[key];
    ++s.failures;
    std::uniform_real_distribution<double> unit{0.0, 1.0};
    s.next = std::max(s.next, now + backoff_delay(s.failures, base, cap, unit(m_rng)));
}

void connect_backoff::succeeded(const std::string& key) {
    const std::lock_guard lock{m_mutex};
    m_servers.erase(key);
}

} // namespace pglease::detail
