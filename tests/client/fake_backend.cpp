/// @file fake_backend.cpp
/// @brief The in-memory pg_lease semantics and the fault-injecting session.
#include "fake_backend.hpp"

#include "pglease/error.hpp"

#include <thread>

namespace pglease::test {

using std::chrono::duration_cast;
using std::chrono::microseconds;

void fake_store::notify(const std::string& name) {
    m_log.push_back(name);
    m_cv.notify_all();
}

acquire_reply fake_store::acquire(const std::string& name, const std::string& holder,
                                  std::chrono::milliseconds ttl) {
    const std::lock_guard lock{m_mutex};
    row& r = m_rows[name];
    const auto now = m_clock.now();
    if (!valid(r)) {
        r.holder = holder;
        r.epoch = ++m_counter;
        r.expires = now + ttl;
        notify(name);
        return {true, r.epoch, holder, ttl};
    }
    if (r.holder == holder) {
        r.expires = now + ttl;
        return {true, r.epoch, holder, ttl};
    }
    return {false, r.epoch, r.holder, duration_cast<microseconds>(r.expires - now)};
}

std::optional<microseconds> fake_store::renew(const std::string& name, const std::string& holder,
                                              std::int64_t epoch, std::chrono::milliseconds ttl) {
    const std::lock_guard lock{m_mutex};
    row& r = m_rows[name];
    if (!valid(r) || r.holder != holder || r.epoch != epoch)
        return std::nullopt;
    r.expires = m_clock.now() + ttl;
    return ttl;
}

bool fake_store::release(const std::string& name, const std::string& holder, std::int64_t epoch) {
    const std::lock_guard lock{m_mutex};
    row& r = m_rows[name];
    if (r.holder != holder || r.epoch != epoch)
        return false;
    r.holder.clear();
    notify(name);
    return true;
}

bool fake_store::revoke(const std::string& name) {
    const std::lock_guard lock{m_mutex};
    row& r = m_rows[name];
    if (r.holder.empty())
        return false;
    r.holder.clear();
    notify(name);
    return true;
}

std::optional<lease_record> fake_store::status(const std::string& name) {
    const std::lock_guard lock{m_mutex};
    const auto it = m_rows.find(name);
    if (it == m_rows.end())
        return std::nullopt;
    lease_record rec;
    rec.name = name;
    rec.holder = it->second.holder;
    rec.epoch = it->second.epoch;
    rec.valid = valid(it->second);
    if (rec.valid)
        rec.remaining = duration_cast<microseconds>(it->second.expires - m_clock.now());
    return rec;
}

fake_store::row fake_store::get(const std::string& name) {
    const std::lock_guard lock{m_mutex};
    return m_rows[name];
}

std::size_t fake_store::log_size() {
    const std::lock_guard lock{m_mutex};
    return m_log.size();
}

bool fake_store::consume(const std::string& name, std::size_t& cursor, bool real_wait,
                         clock::time_point until, const std::function<bool()>& stop) {
    std::unique_lock lock{m_mutex};
    const auto hit = [&] {
        for (std::size_t i = cursor; i < m_log.size(); ++i)
            if (m_log[i] == name) {
                cursor = m_log.size();
                return true;
            }
        cursor = m_log.size();
        return false;
    };
    if (hit())
        return true;
    if (!real_wait)
        return false;
    while (!stop()) {
        if (m_cv.wait_until(lock, to_steady(m_clock, until)) == std::cv_status::timeout)
            return hit();
        if (hit())
            return true;
    }
    return false;
}

void fake_store::poke() {
    const std::lock_guard lock{m_mutex};
    m_cv.notify_all();
}

template <typename F>
auto fake_backend::call(F&& body) {
    if (const auto h = m_hang.load(); h > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds{h});
    if (m_during)
        m_during();
    if (m_fail_before.load() > 0) {
        --m_fail_before;
        throw connection_lost{"fake: connection lost before the call"};
    }
    if (m_fake != nullptr)
        m_fake->advance(m_latency);
    auto result = body();
    if (m_fail_after.load() > 0) {
        --m_fail_after;
        throw connection_lost{"fake: connection lost after the call ran"};
    }
    return result;
}

void fake_backend::bounded_wait(clock::time_point deadline) {
    const auto cancelled = [] {
        throw error{"fake: canceling statement due to user request", "57014"};
    };
    if (m_fake != nullptr && m_block > std::chrono::milliseconds::zero()) {
        const auto now = m_fake->now();
        if (deadline <= now || deadline - now < m_block) {
            m_fake->advance_to(deadline);
            cancelled();
        }
        m_fake->advance(m_block);
    }
    if (const auto s = m_stall.load(); s > 0) {
        const auto& clk = m_store.time();
        const auto now = clk.now();
        const std::chrono::milliseconds stall{s};
        if (deadline <= now || deadline - now < stall) {
            std::this_thread::sleep_until(to_steady(clk, deadline));
            cancelled();
        }
        std::this_thread::sleep_for(stall);
    }
}

acquire_reply fake_backend::acquire(const std::string& name, const std::string& holder,
                                    std::chrono::milliseconds ttl, clock::time_point deadline) {
    ++m_acquires;
    return call([&] {
        bounded_wait(deadline);
        return m_store.acquire(name, holder, ttl);
    });
}

std::optional<microseconds> fake_backend::renew(const std::string& name, const std::string& holder,
                                                std::int64_t epoch, std::chrono::milliseconds ttl,
                                                clock::time_point deadline) {
    ++m_renews;
    return call([&] {
        bounded_wait(deadline);
        return m_store.renew(name, holder, epoch, ttl);
    });
}

bool fake_backend::release(const std::string& name, const std::string& holder, std::int64_t epoch) {
    return call([&] { return m_store.release(name, holder, epoch); });
}

bool fake_backend::revoke(const std::string& name) {
    return call([&] { return m_store.revoke(name); });
}

std::optional<lease_record> fake_backend::status(const std::string& name) {
    return call([&] { return m_store.status(name); });
}

bool fake_backend::listen() {
    if (!m_listening) {
        m_listening = true;
        m_cursor = m_store.log_size();
    }
    return true;
}

bool fake_backend::wait_for_change(const std::string& name, clock::time_point until) noexcept {
    ++m_waits;
    if (m_before_wait)
        m_before_wait();
    if (m_interrupted.exchange(false))
        return false;
    if (m_fake != nullptr) {
        // Fake time: an event already logged wakes at once; otherwise time
        // jumps to the wake-up point.
        if (m_listening && m_store.consume(name, m_cursor, false, until, [] { return true; }))
            return true;
        m_fake->advance_to(until);
        return false;
    }
    if (!m_listening) {
        std::size_t ignored = m_store.log_size();
        (void)m_store.consume("", ignored, true, until, [this] { return m_interrupted.load(); });
        m_interrupted.store(false);
        return false;
    }
    const bool hit =
        m_store.consume(name, m_cursor, true, until, [this] { return m_interrupted.load(); });
    m_interrupted.store(false);
    return hit;
}

void fake_backend::interrupt() noexcept {
    m_interrupted.store(true);
    m_store.poke();
}

} // namespace pglease::test
