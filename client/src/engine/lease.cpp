/// @file lease.cpp
/// @brief The lease state: epoch, holder, local deadline.
///
/// engine/: what every holder is built from. One lease (its grant and the
/// local deadline, send time + ttl - margin), holder_config (the settings
/// and timing rules all holders share), renew_round (one lease_renew_many
/// for many leases), the callback queue and call_observer, and backend.cpp,
/// the seam the holders talk to: they never see SQL.
#include "pglease/lease.hpp"

#include "pglease/error.hpp"

#include <algorithm>

namespace pglease {

namespace {
constexpr std::chrono::milliseconds min_wait{1};
} // namespace

lease::lease(backend& db, std::string name, lease_options options, const clock& clk)
    : m_db{db}
    , m_clock{clk}
    , m_name{std::move(name)}
    , m_options{std::move(options)} {
    validate_lease_name(m_name);
    m_options.validate();
}

lease::rep lease::deadline_after(clock::time_point sent) const noexcept {
    const auto d = sent + m_options.ttl - m_options.effective_safety_margin();
    return d.time_since_epoch().count();
}

bool lease::acquire(clock::time_point deadline) {
    // A handover to us that a NOTIFY told of is confirmed by a read: the
    // holder's commit made the grant durable, an acquire would only extend
    // it, with a second durable commit.
    if (m_db.take_handover_hint(m_name, m_options.identity) && confirm_handover())
        return true;
    // Take the time before sending: the server starts the ttl later than
    // this, so sent + ttl can only be earlier than its expiry.
    const auto sent = m_clock.now();
    const acquire_reply reply =
        m_db.acquire(m_name, m_options.identity, m_options.ttl, m_options.lock_delay, deadline);
    return apply_acquire(sent, m_clock.now(), reply);
}

bool lease::apply_acquire(clock::time_point sent, clock::time_point arrived,
                          const acquire_reply& reply) {
    // 1. Remember whom the server named and until when (for followers).
    {
        const std::lock_guard lock{m_mutex};
        m_holder = reply.holder;
        if (reply.remaining)
            m_expiry_hint = arrived + *reply.remaining;
        else
            m_expiry_hint.reset();
    }

    // 2. Not ours: whatever we believed before is over.
    if (!reply.acquired) {
        m_deadline.store(lost);
        return false;
    }

    // 3. Ours: a new epoch, or the same one extended.
    m_epoch.store(reply.epoch);
    m_renewed_at.store(sent.time_since_epoch().count());
    m_deadline.store(deadline_after(sent));
    return true;
}

bool lease::confirm_handover() {
    // The time before sending, as for acquire: the server measured the time
    // left later than this, so sent + remaining is never after its expiry.
    const auto sent = m_clock.now();
    const std::optional<lease_record> row = m_db.status_if_durable(m_name);
    if (!row || !row->valid || row->holder != m_options.identity)
        return false; // not ours after all (a stale or forged hint), or a standby to wait for
    const auto deadline = sent + row->remaining - m_options.effective_safety_margin();
    if (deadline <= m_clock.now())
        return false; // too little left to lead on: an acquire extends it
    {
        const std::lock_guard lock{m_mutex};
        m_holder = row->holder;
        m_expiry_hint = m_clock.now() + row->remaining;
    }
    m_epoch.store(row->epoch);
    m_renewed_at.store(sent.time_since_epoch().count());
    m_deadline.store(deadline.time_since_epoch().count());
    return true;
}

bool lease::acquire_for(std::chrono::milliseconds timeout) {
    const auto end = m_clock.now() + timeout;
    // Subscribe before the first try, so a release between our try and our
    // wait is not missed (notifications queue on the session).
    (void)m_db.listen();
    for (;;) {
        auto wake = end;
        try {
            if (acquire(end))
                return true;
            if (const auto hint = expiry_hint())
                wake = std::min(wake, std::max(*hint, m_clock.now() + min_wait));
        } catch (const config_error&) {
            throw;
        } catch (const invalid_argument&) {
            throw;
        } catch (const permission_denied&) {
            throw;
        } catch (const error&) {
            // Lost connection, statement timeout, ...: try again later.
            wake = std::min(wake, m_clock.now() + m_options.retry_period);
        }
        if (m_clock.now() >= end)
            return false;
        (void)m_db.wait_for_change(m_name, wake);
    }
}

bool lease::renew(clock::time_point deadline) {
    const std::int64_t epoch = m_epoch.load();
    rep before = m_deadline.load();
    if (epoch == 0 || before == lost)
        return false;

    // The time before sending, as for acquire; the call may not outlast the
    // local deadline: a renew answered later could not keep us leading.
    const auto sent = m_clock.now();
    const clock::time_point local{clock::duration{before}};
    const auto bound = sent < local ? std::min(deadline, local) : deadline;
    if (sent >= bound)
        throw error{"lease \"" + m_name + "\": renew not sent: no time left before its deadline"};
    const auto remaining = m_db.renew(m_name, m_options.identity, epoch, m_options.ttl, bound);
    if (!remaining) {
        m_deadline.store(lost);
        return false;
    }
    // Publish the new deadline only if nobody called mark_lost() meanwhile.
    if (!m_deadline.compare_exchange_strong(before, deadline_after(sent)))
        return false;
    m_renewed_at.store(sent.time_since_epoch().count());
    return true;
}

bool lease::apply_renewal(clock::time_point sent, clock::time_point before, std::int64_t epoch,
                          bool renewed) noexcept {
    if (epoch == 0 || epoch != m_epoch.load() || before == clock::time_point::min())
        return false;
    if (!renewed) {
        m_deadline.store(lost);
        return false;
    }
    // As renew(): only if nobody called mark_lost() (or acquired) meanwhile,
    // and never for a renew sent after the local deadline.
    rep expected = before.time_since_epoch().count();
    if (sent.time_since_epoch().count() >= expected ||
        !m_deadline.compare_exchange_strong(expected, deadline_after(sent)))
        return false;
    m_renewed_at.store(sent.time_since_epoch().count());
    return true;
}

bool lease::release() {
    const std::int64_t epoch = m_epoch.load();
    if (epoch == 0)
        return false;
    m_deadline.store(lost); // stop claiming before the server hears of it
    // A session found broken fails the call before the server saw it; the
    // next call reconnects. Try again while the grant may still be valid on
    // the server, so a clean stop hands the lease on instead of leaving the
    // successor to wait out the ttl. A timeout is not tried again (the
    // server is slow: a second call would only add to its load).
    const auto worth_until = renewed_at() + m_options.ttl;
    for (int tries = 1;; ++tries) {
        try {
            return m_db.release(m_name, m_options.identity, epoch);
        } catch (const connection_lost&) {
            if (tries >= release_tries || m_clock.now() >= worth_until)
                throw;
        }
    }
}

std::optional<std::int64_t> lease::hand_over(const std::string& successor) {
    const std::int64_t epoch = m_epoch.load();
    if (epoch == 0)
        return std::nullopt;
    m_deadline.store(lost); // as release(): stop claiming before the server moves it
    return m_db.handover(m_name, m_options.identity, epoch, successor);
}

void lease::mark_lost() noexcept {
    m_deadline.store(lost);
}

bool lease::held() const noexcept {
    return m_clock.now().time_since_epoch().count() < m_deadline.load();
}

clock::time_point lease::deadline() const noexcept {
    const rep d = m_deadline.load();
    return d == lost ? clock::time_point::min() : clock::time_point{clock::duration{d}};
}

clock::time_point lease::renewed_at() const noexcept {
    const rep r = m_renewed_at.load();
    return r == lost ? clock::time_point::min() : clock::time_point{clock::duration{r}};
}

std::string lease::holder() const {
    const std::lock_guard lock{m_mutex};
    return m_holder;
}

std::optional<clock::time_point> lease::expiry_hint() const {
    const std::lock_guard lock{m_mutex};
    return m_expiry_hint;
}

fence_token lease::token() const {
    const std::int64_t epoch = m_epoch.load();
    if (!held())
        throw lease_lost{"lease \"" + m_name + "\" is not held by " + m_options.identity +
                         " (epoch " + std::to_string(epoch) + ")"};
    return fence_token{m_name, epoch, m_schema};
}

detail::fence_bound lease::fenced_bound(std::int64_t epoch) const {
    using steady = std::chrono::steady_clock;
    // The local deadline of grant @p epoch + the grace, on the steady clock
    // (min() once that grant is gone). Read on the watchdog's thread: the
    // lease outlives the run_fenced() call that asks.
    auto until = [this, epoch]() -> steady::time_point {
        const rep d = m_deadline.load();
        if (d == lost || m_epoch.load() != epoch)
            return steady::time_point::min();
        return to_steady(m_clock, clock::time_point{clock::duration{d}}) + fenced_grace;
    };
    const steady::time_point first = until();
    if (first == steady::time_point::min()) // lost since token(): the grace only
        return {steady::now() + fenced_grace, {}};
    return {first, std::move(until)};
}

} // namespace pglease
