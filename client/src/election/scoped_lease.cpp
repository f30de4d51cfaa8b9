/// @file scoped_lease.cpp
/// @brief The scoped lease's renew thread.
#include "pglease/scoped_lease.hpp"

#include "engine/loop_thread.hpp"
#include "pglease/error.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/downstream.hpp"

#include <algorithm>

namespace pglease {

scoped_lease::scoped_lease(std::string name, lease_options options, std::chrono::milliseconds wait,
                           const connection_options& connection)
    : scoped_lease{std::make_unique<pq_backend>(connection),
                   std::move(name),
                   std::move(options),
                   wait,
                   system_clock(),
                   {}} {
    m_lease.set_schema(connection.schema);
}

scoped_lease::scoped_lease(std::unique_ptr<backend> db, std::string name, lease_options options,
                           std::chrono::milliseconds wait, const clock& clk)
    : scoped_lease{std::move(db), std::move(name), std::move(options), wait, clk, {}} {}

scoped_lease::scoped_lease(std::string name, lease_options options, std::chrono::milliseconds wait,
                           const connection_options& connection,
                           const std::vector<connection_options>& downstreams)
    : scoped_lease{std::make_unique<pq_backend>(connection),
                   std::move(name),
                   std::move(options),
                   wait,
                   system_clock(),
                   downstream_backends(downstreams)} {
    m_lease.set_schema(connection.schema);
}

scoped_lease::scoped_lease(std::unique_ptr<backend> db, std::string name, lease_options options,
                           std::chrono::milliseconds wait, const clock& clk,
                           std::vector<std::unique_ptr<backend>> downstreams)
    : m_clock{clk}
    , m_db{std::move(db)}
    , m_lease{*m_db, std::move(name), std::move(options), clk}
    , m_downstreams{std::move(downstreams)}
    , m_loop{std::make_unique<detail::loop_thread>()} {
    bool got = false;
    try {
        got = wait > std::chrono::milliseconds::zero() ? m_lease.acquire_for(wait)
                                                       : m_lease.acquire();
    } catch (const connection_lost&) {
        got = false;
    }
    if (got && !m_downstreams.empty()) {
        m_refusal = raise_downstreams(*m_db, numbered_downstreams(m_downstreams), m_lease.name(),
                                      m_lease.epoch(), m_lease.deadline(), m_clock);
        if (!m_refusal.empty()) {
            // No work before the old leader is shut out downstream: give the
            // grant back at once rather than sit on it.
            try {
                (void)m_lease.release();
            } catch (const std::exception&) {
                // The server will let it expire.
            }
            m_lease.mark_lost();
            got = false;
        }
    }
    if (got)
        m_loop->start(nullptr, [this] { renew_loop(); });
}

scoped_lease::~scoped_lease() {
    release();
}

void scoped_lease::renew_loop() noexcept {
    const auto ttl = m_lease.options().ttl;
    const auto retry = std::max(ttl / 10, std::chrono::milliseconds{1});
    auto next = m_lease.renewed_at() + ttl / 3;
    std::unique_lock lock{m_mutex};
    for (;;) {
        m_cv.wait_until(lock, to_steady(m_clock, next), [this] { return m_stopping; });
        if (m_stopping)
            return;
        lock.unlock();
        bool keep_going = true;
        try {
            if (m_lease.renew())
                next = m_lease.renewed_at() + ttl / 3;
            else
                keep_going = false; // lost: held() is false now
        } catch (const std::exception&) {
            // Unknown outcome: the deadline did not move; retry until it passes.
            keep_going = m_lease.held();
            next = m_clock.now() + retry;
        }
        lock.lock();
        if (!keep_going)
            return;
    }
}

void scoped_lease::release() noexcept {
    {
        const std::lock_guard lock{m_mutex};
        if (m_released)
            return;
        m_released = true;
    }
    m_loop->stop([this] {
        {
            const std::lock_guard lock{m_mutex};
            m_stopping = true;
        }
        m_cv.notify_all();
    });
    try {
        (void)m_lease.release();
    } catch (const std::exception&) {
        // The server will let it expire.
    }
}

} // namespace pglease
