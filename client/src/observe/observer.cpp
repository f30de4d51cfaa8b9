/// @file observer.cpp
/// @brief The observer's thread: read lease_status, wait for a notification,
/// the known expiry or the resync period, read again.
///
/// observe/: following a lease without campaigning: observer (its thread),
/// lease_view (one reading) and what changed between two readings.
#include "pglease/observer.hpp"

#include "engine/call_observer.hpp"
#include "engine/loop_thread.hpp"

#include "pglease/error.hpp"
#include "pglease/pq_backend.hpp"

#include <algorithm>

namespace pglease {
namespace {

observer_options checked(observer_options options) {
    options.validate();
    return options;
}

/// After the known expiry, wait this much more before re-reading, so the
/// server's clock has passed it too.
constexpr std::chrono::milliseconds expiry_slack{1};

} // namespace

observer::observer(observer_options options)
    : observer{std::move(options), nullptr, system_clock()} {}

observer::observer(observer_options options, std::unique_ptr<backend> db, const clock& clk)
    : m_options{checked(std::move(options))}
    , m_clock{clk}
    , m_db{db ? std::move(db) : std::make_unique<pq_backend>(m_options.connection)}
    , m_loop{std::make_unique<detail::loop_thread>()} {
    m_view.name = m_options.lease_name;
}

observer::~observer() {
    stop();
}

void observer::start() {
    m_loop->start(nullptr, [this] { run(); });
}

void observer::stop() noexcept {
    m_loop->stop([this] {
        m_db->interrupt();
        m_changed.notify_all();
    });
}

lease_view observer::current() const {
    const std::lock_guard lock{m_mutex};
    return m_view;
}

std::optional<lease_view> observer::wait_for_change(std::chrono::milliseconds timeout,
                                                    std::optional<std::uint64_t> since) const {
    std::unique_lock lock{m_mutex};
    const std::uint64_t seen = since ? *since : m_view.version;
    if (!m_changed.wait_for(lock, timeout,
                            [&] { return m_view.version > seen || m_loop->stopping(); }) ||
        m_view.version <= seen)
        return std::nullopt;
    return m_view;
}

void observer::publish(lease_view next) {
    std::optional<lease_change> change;
    {
        const std::lock_guard lock{m_mutex};
        change = compare(m_view, next);
        next.version = m_view.version + (change ? 1 : 0);
        m_view = next;
    }
    if (!change)
        return;
    m_changed.notify_all();
    detail::call_observer(m_options.on_change, *change, next);
}

clock::time_point observer::read() {
    // 1. One bounded reading of lease_status (it reconnects, and re-LISTENs,
    //    if the session was lost).
    const std::optional<lease_record> rec = m_db->status(m_options.lease_name);
    const auto arrival = m_clock.now();
    lease_view next = current();
    next.read_at = arrival;
    next.stale = false;
    next.holder = rec ? rec->holder : std::string{};
    next.epoch = rec ? rec->epoch : 0;
    next.valid = rec && rec->valid;
    next.expires.reset();
    if (next.valid)
        next.expires = arrival + rec->remaining;
    publish(next);
    // 2. Read again at the known expiry (never early: the server measured the
    //    time left before the reply arrived), or after the resync period.
    auto wake = arrival + m_options.resync_period;
    if (next.expires)
        wake = std::min(wake, *next.expires + expiry_slack);
    return wake;
}

void observer::run() noexcept {
    (void)m_db->listen(); // false: no notifications, readings on schedule only
    while (!m_loop->stopping()) {
        clock::time_point wake;
        try {
            wake = read();
        } catch (const std::exception&) {
            // 3. Failed (connection lost, call bounded out): keep the last
            //    view, marked stale; retry on a new session.
            {
                const std::lock_guard lock{m_mutex};
                m_view.stale = true;
            }
            wake = m_clock.now() + m_options.retry_period;
        }
        if (m_loop->stopping())
            break;
        // 4. Sleep until a notification for this lease, the wake-up time, or
        //    stop(): no polling.
        (void)m_db->wait_for_change(m_options.lease_name, wake);
    }
    m_changed.notify_all();
}

} // namespace pglease
