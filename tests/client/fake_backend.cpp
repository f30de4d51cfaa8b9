/// @file fake_backend.cpp
/// @brief The fault-injecting session over the public test double.
#include "fake_backend.hpp"

#include "pglease/error.hpp"

#include <thread>

namespace pglease::test {

using std::chrono::microseconds;

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
        const auto& clk = m_store.clock();
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
                                    std::chrono::milliseconds ttl,
                                    std::chrono::milliseconds lock_delay,
                                    clock::time_point deadline) {
    ++m_acquires;
    return call([&] {
        bounded_wait(deadline);
        return m_inner->acquire(name, holder, ttl, lock_delay, clock::time_point::max());
    });
}

std::optional<microseconds> fake_backend::renew(const std::string& name, const std::string& holder,
                                                std::int64_t epoch, std::chrono::milliseconds ttl,
                                                clock::time_point deadline) {
    ++m_renews;
    return call([&] {
        bounded_wait(deadline);
        return m_inner->renew(name, holder, epoch, ttl, clock::time_point::max());
    });
}

bool fake_backend::release(const std::string& name, const std::string& holder, std::int64_t epoch) {
    return call([&] { return m_inner->release(name, holder, epoch); });
}

std::optional<std::int64_t> fake_backend::handover(const std::string& name,
                                                   const std::string& holder, std::int64_t epoch,
                                                   const std::string& successor) {
    return call([&] { return m_inner->handover(name, holder, epoch, successor); });
}

bool fake_backend::revoke(const std::string& name) {
    return call([&] { return m_inner->revoke(name); });
}

std::optional<lease_record> fake_backend::status(const std::string& name) {
    ++m_statuses;
    return call([&] { return m_inner->status(name); });
}

std::optional<lease_record> fake_backend::status_if_durable(const std::string& name) {
    ++m_statuses;
    return call([&] { return m_inner->status_if_durable(name); });
}

bool fake_backend::take_handover_hint(const std::string& name, const std::string& holder) noexcept {
    return m_inner->take_handover_hint(name, holder);
}

bool fake_backend::listen() {
    return m_inner->listen();
}

bool fake_backend::wait_for_change(const std::string& name, clock::time_point until) noexcept {
    ++m_waits;
    if (m_before_wait)
        m_before_wait();
    const bool interrupted = m_interrupted.exchange(false);
    if (m_fake == nullptr)
        return m_inner->wait_for_change(name, until);
    // Fake time: an interrupt or an event already logged ends the wait at
    // once; otherwise time jumps to the wake-up point.
    if (interrupted) {
        (void)m_inner->wait_for_change(name, clock::time_point::min()); // clears it
        return false;
    }
    if (m_inner->wait_for_change(name, m_fake->now()))
        return true;
    m_fake->advance_to(until);
    return false;
}

std::string fake_backend::store_id(clock::time_point) {
    return call([] { return std::string{"fake-store"}; });
}

void fake_backend::interrupt() noexcept {
    m_interrupted.store(true);
    m_inner->interrupt();
}

} // namespace pglease::test
