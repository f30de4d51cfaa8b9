/// @file lease_store.cpp
/// @brief The in-memory pg_lease semantics, the fence check, and the
/// scripting calls of the test double. Twins: extension/lease_acquire.c,
/// lease_change.c and fence_trigger.c, sql/sql_edition/50_grants.sql and
/// 60_fence.sql; tests/contract/cases.json keeps the three equal.
#include "pglease/testing/lease_store.hpp"

#include "pglease/error.hpp"
#include "store_state.hpp"

#include <algorithm>
#include <stdexcept>

namespace pglease::testing {

using std::chrono::duration_cast;
using std::chrono::microseconds;

namespace {
constexpr std::chrono::seconds settle_bound{2};

// The server's argument checks (SPEC section 3, SQLSTATE 22023), so code
// tested against the double meets the errors the server raises.
constexpr std::size_t max_label_bytes = 255;
constexpr std::chrono::hours max_ttl{24}; // pg_lease.max_ttl's default

void check_label(const std::string& value, const char* what) {
    if (value.empty() || value.size() > max_label_bytes || value.find('\0') != std::string::npos)
        throw error{std::string{what} + " must be 1 to 255 bytes, without NUL", "22023"};
}

void check_ttl(std::chrono::milliseconds ttl) {
    if (ttl <= std::chrono::milliseconds::zero() || ttl > max_ttl)
        throw error{"ttl must be positive and at most pg_lease.max_ttl (1 day)", "22023"};
}

void check_grant(const std::string& name, const std::string& holder, std::chrono::milliseconds ttl,
                 std::chrono::milliseconds lock_delay) {
    check_label(name, "lease name");
    check_label(holder, "holder");
    check_ttl(ttl);
    if (lock_delay < std::chrono::milliseconds::zero())
        throw error{"lock_delay must not be negative", "22023"};
}
} // namespace

namespace detail {

bool store_state::has_event(const waiter& w) const noexcept {
    for (std::size_t i = w.cursor; i < log.size(); ++i) {
        const bool hit = !w.any.empty() ? freed[i] && w.any.count(log[i]) > 0
                         : w.prefix     ? log[i].compare(0, w.name.size(), w.name) == 0
                                        : log[i] == w.name;
        if (hit)
            return true;
    }
    return false;
}

bool store_state::due(const waiter& w) const noexcept {
    return w.interrupted || (w.listening && has_event(w)) || clk.now() >= w.until;
}

void store_state::notify(const std::string& name, bool is_free, const std::string& successor) {
    log.push_back(name);
    freed.push_back(is_free);
    handed_to.push_back(successor);
    changed.notify_all();
}

std::int64_t store_state::grant(const std::string& name, const std::string& holder,
                                std::chrono::milliseconds ttl,
                                std::chrono::milliseconds lock_delay) {
    lease_row& r = rows[name];
    const bool extend = valid(r) && r.holder == holder;
    r.expires = clk.now() + ttl;
    r.ttl = ttl;
    if (extend)
        return r.epoch; // not a grant: no event
    r.holder = holder;
    r.lock_delay = lock_delay;
    r.epoch = ++counter;
    notify(name);
    return r.epoch;
}

bool store_state::settle(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout) {
    using steady = std::chrono::steady_clock;
    const auto self = std::this_thread::get_id();
    const auto busy = [&](const waiter& w) {
        return !w.waiting && w.entries > 0 && w.thread != self &&
               steady::now() - w.left < busy_window;
    };
    std::vector<std::pair<std::uint64_t, std::uint64_t>> woken;
    for (const auto& [id, w] : waiters)
        if (busy(w) || (w.waiting && due(w)))
            woken.emplace_back(id, w.entries);
    changed.notify_all();
    const auto until = steady::now() + timeout;
    for (;;) {
        bool done = true;
        for (const auto& [id, entries] : woken) {
            const auto it = waiters.find(id);
            if (it == waiters.end())
                continue;
            const waiter& w = it->second;
            const bool back = w.entries > entries && w.waiting;
            const bool stopped = !w.waiting && !busy(w); // out too long: not a loop now
            if (!back && !stopped)
                done = false;
        }
        if (done)
            return true;
        const auto now = steady::now();
        if (now >= until)
            return false;
        // Re-check at least every few ms: a loop that stopped never notifies.
        settled.wait_until(lock, std::min(until, now + std::chrono::milliseconds{5}));
    }
}

} // namespace detail

lease_store::lease_store()
    : m_state{std::make_shared<detail::store_state>(nullptr)} {}

lease_store::lease_store(const pglease::clock& clk)
    : m_state{std::make_shared<detail::store_state>(&clk)} {}

lease_store::~lease_store() = default;

const pglease::clock& lease_store::clock() const noexcept {
    return m_state->clk;
}

void lease_store::advance(clock::duration d) {
    detail::store_state& s = *m_state;
    if (!s.owns_clock())
        throw std::logic_error{"lease_store::advance: the store runs on an external clock"};
    std::unique_lock lock{s.mutex};
    const auto target = s.own.now() + d;
    for (;;) {
        // The next point some session waits for, if it comes before target:
        // stop there and let that loop run (renew on schedule), then go on.
        const auto now = s.own.now();
        auto next = target;
        for (const auto& entry : s.waiters)
            if (entry.second.waiting && entry.second.until > now && entry.second.until < next)
                next = entry.second.until;
        s.own.advance_to(next);
        (void)s.settle(lock, settle_bound);
        if (next >= target)
            return;
    }
}

void lease_store::settle_after_change(std::unique_lock<std::mutex>& lock) {
    if (m_settles)
        (void)m_state->settle(lock, settle_bound);
}

bool lease_store::settle(std::chrono::milliseconds timeout) {
    std::unique_lock lock{m_state->mutex};
    return m_state->settle(lock, timeout);
}

bool lease_store::wait_until_waiting(std::size_t sessions, std::chrono::milliseconds timeout) {
    detail::store_state& s = *m_state;
    std::unique_lock lock{s.mutex};
    return s.settled.wait_for(lock, timeout, [&] {
        std::size_t idle = 0;
        for (const auto& entry : s.waiters)
            if (entry.second.waiting && !s.due(entry.second))
                ++idle;
        return idle >= sessions;
    });
}

std::int64_t lease_store::mark_held(const std::string& name, const std::string& identity,
                                    std::chrono::milliseconds ttl) {
    std::unique_lock lock{m_state->mutex};
    const std::int64_t epoch = m_state->grant(name, identity, ttl);
    settle_after_change(lock);
    return epoch;
}

std::int64_t lease_store::mark_held_elsewhere(const std::string& name, const std::string& identity,
                                              std::chrono::milliseconds ttl) {
    return mark_held(name, identity, ttl);
}

bool lease_store::revoke(const std::string& name) {
    std::unique_lock lock{m_state->mutex};
    lease_row& r = m_state->rows[name];
    if (r.holder.empty())
        return false;
    r.holder.clear();
    r.expires = std::min(r.expires, m_state->clk.now()); // lost now: its lock delay starts
    m_state->notify(name, true);
    settle_after_change(lock);
    return true;
}

bool lease_store::expire(const std::string& name) {
    std::unique_lock lock{m_state->mutex};
    lease_row& r = m_state->rows[name];
    if (!m_state->valid(r))
        return false;
    r.expires = m_state->clk.now();
    settle_after_change(lock);
    return true;
}

void lease_store::fence_check(const fence_token& token) const {
    const std::lock_guard lock{m_state->mutex};
    const auto it = m_state->rows.find(token.lease_name);
    const lease_row r = it == m_state->rows.end() ? lease_row{} : it->second;
    const std::string lease = "lease \"" + token.lease_name + "\"";
    if (r.epoch != token.epoch)
        throw fence_rejected{"fenced write rejected: epoch " + std::to_string(token.epoch) +
                                 " of " + lease + " is stale (current epoch " +
                                 std::to_string(r.epoch) + ")",
                             "LS001"};
    if (!m_state->valid(r))
        throw fence_rejected{"fenced write rejected: epoch " + std::to_string(token.epoch) +
                                 " of " + lease +
                                 " is no longer valid (expired, released or "
                                 "revoked)",
                             "LS002"};
}

acquire_reply lease_store::acquire(const std::string& name, const std::string& holder,
                                   std::chrono::milliseconds ttl,
                                   std::chrono::milliseconds lock_delay) {
    check_grant(name, holder, ttl, lock_delay);
    std::unique_lock lock{m_state->mutex};
    const lease_row& r = m_state->rows[name];
    const auto now = m_state->clk.now();
    if (m_state->valid(r) && r.holder != holder)
        return {false, r.epoch, r.holder, duration_cast<microseconds>(r.expires - now)};
    if (!m_state->valid(r) && now < m_state->available_at(r, holder))
        return {false, r.epoch, r.holder,
                duration_cast<microseconds>(m_state->available_at(r, holder) - now)};
    const auto before = m_state->log.size();
    const std::int64_t epoch = m_state->grant(name, holder, ttl, lock_delay);
    if (m_state->log.size() != before)
        settle_after_change(lock);
    return {true, epoch, holder, ttl};
}

std::optional<microseconds> lease_store::renew(const std::string& name, const std::string& holder,
                                               std::int64_t epoch, std::chrono::milliseconds ttl) {
    check_ttl(ttl);
    const std::lock_guard lock{m_state->mutex};
    lease_row& r = m_state->rows[name];
    if (!m_state->valid(r) || r.holder != holder || r.epoch != epoch)
        return std::nullopt;
    r.expires = m_state->clk.now() + ttl;
    r.ttl = ttl;
    return ttl;
}

bool lease_store::release(const std::string& name, const std::string& holder, std::int64_t epoch) {
    std::unique_lock lock{m_state->mutex};
    lease_row& r = m_state->rows[name];
    if (r.holder.empty() || r.holder != holder || r.epoch != epoch)
        return false;
    r.holder.clear();
    r.expires = std::min(r.expires, m_state->clk.now());
    r.lock_delay = std::chrono::milliseconds::zero(); // released: nobody waits
    m_state->notify(name, true);
    settle_after_change(lock);
    return true;
}

std::optional<std::int64_t> lease_store::handover(const std::string& name,
                                                  const std::string& holder, std::int64_t epoch,
                                                  const std::string& successor) {
    std::unique_lock lock{m_state->mutex};
    lease_row& r = m_state->rows[name];
    if (!m_state->valid(r) || r.holder != holder || r.epoch != epoch)
        return std::nullopt;
    r.holder = successor;
    r.epoch = ++m_state->counter;
    r.expires = m_state->clk.now() + r.ttl;
    m_state->notify(name, false, successor);
    settle_after_change(lock);
    return r.epoch;
}

std::optional<lease_record> lease_store::status(const std::string& name) const {
    const std::lock_guard lock{m_state->mutex};
    const auto it = m_state->rows.find(name);
    if (it == m_state->rows.end())
        return std::nullopt;
    lease_record rec;
    rec.name = name;
    rec.holder = it->second.holder;
    rec.epoch = it->second.epoch;
    rec.valid = m_state->valid(it->second);
    if (rec.valid)
        rec.remaining = duration_cast<microseconds>(it->second.expires - m_state->clk.now());
    return rec;
}

std::vector<lease_record> lease_store::list(const std::string& prefix) const {
    std::vector<lease_record> out;
    const std::lock_guard lock{m_state->mutex};
    for (auto it = m_state->rows.lower_bound(prefix);
         it != m_state->rows.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
        lease_record rec;
        rec.name = it->first;
        rec.holder = it->second.holder;
        rec.epoch = it->second.epoch;
        rec.valid = m_state->valid(it->second);
        if (rec.valid)
            rec.remaining = duration_cast<microseconds>(it->second.expires - m_state->clk.now());
        out.push_back(std::move(rec));
    }
    return out;
}

lease_row lease_store::row(const std::string& name) const {
    const std::lock_guard lock{m_state->mutex};
    const auto it = m_state->rows.find(name);
    return it == m_state->rows.end() ? lease_row{} : it->second;
}

} // namespace pglease::testing
