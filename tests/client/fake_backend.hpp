/// @file fake_backend.hpp
/// @brief Fault injection over the public test double: a session of a
/// pglease::testing::lease_store whose calls can fail, lose their reply,
/// take (fake or real) time, or hang.
#pragma once

#include "fake_clock.hpp"
#include "pglease/backend.hpp"
#include "pglease/testing/lease_store.hpp"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

namespace pglease::test {

/// The shared "database": the public test double's in-memory store.
using fake_store = pglease::testing::lease_store;

/// One client session of a fake_store (its public session underneath),
/// with faults injected around each call. Like pq_backend, acquire() and
/// renew() honour the caller's deadline: a call slowed down by block() or
/// stall() past it fails at the deadline with SQLSTATE 57014 (the cancel
/// that pq_backend's watchdog sends), without reaching the store.
class fake_backend final : public backend {
public:
    /// @p fake: the store's clock when it is a fake_clock (waits then
    /// advance it instead of sleeping), nullptr for real time.
    fake_backend(fake_store& store, fake_clock* fake = nullptr)
        : m_store{store}
        , m_inner{store.connect()}
        , m_fake{fake} {}

    using backend::acquire;
    acquire_reply acquire(const std::string& name, const std::string& holder,
                          std::chrono::milliseconds ttl, std::chrono::milliseconds lock_delay,
                          clock::time_point deadline) override;
    /// acquire() with no lock delay and no deadline.
    acquire_reply acquire(const std::string& name, const std::string& holder,
                          std::chrono::milliseconds ttl) {
        return acquire(name, holder, ttl, clock::time_point::max());
    }
    std::optional<std::chrono::microseconds>
    renew(const std::string& name, const std::string& holder, std::int64_t epoch,
          std::chrono::milliseconds ttl,
          clock::time_point deadline = clock::time_point::max()) override;
    bool release(const std::string& name, const std::string& holder, std::int64_t epoch) override;
    bool revoke(const std::string& name) override;
    std::optional<std::int64_t> handover(const std::string& name, const std::string& holder,
                                         std::int64_t epoch, const std::string& successor) override;
    std::optional<lease_record> status(const std::string& name) override;
    std::optional<lease_record> status_if_durable(const std::string& name) override;
    bool listen() override;
    bool wait_for_change(const std::string& name, clock::time_point until) noexcept override;
    void interrupt() noexcept override;
    bool take_handover_hint(const std::string& name, const std::string& holder) noexcept override;
    /// The store's identity as a lease store: "fake-store".
    std::string store_id(clock::time_point deadline) override;

    // --- fault injection (set from the test thread before the call) -------
    /// The next @p n calls fail with connection_lost before reaching the store.
    void fail_before(int n) { m_fail_before = n; }
    /// The next @p n calls reach the store, then fail (reply lost).
    void fail_after(int n) { m_fail_after = n; }
    /// Fake time that passes between sending a call and the store running it.
    void latency(std::chrono::milliseconds d) { m_latency = d; }
    /// Real time each call blocks before reaching the store, ignoring any
    /// deadline (a stall no bound can cut, e.g. while connecting).
    void hang(std::chrono::milliseconds d) { m_hang = d.count(); }
    /// Fake time each acquire/renew is blocked on the server (a lock wait)
    /// before it reaches the store; cut at the caller's deadline (57014).
    void block(std::chrono::milliseconds d) { m_block = d; }
    /// Real time each acquire/renew is blocked on the server; cut at the
    /// caller's deadline (57014), as pq_backend's watchdog does.
    void stall(std::chrono::milliseconds d) { m_stall = d.count(); }
    /// Runs inside every call, before the store (e.g. to race mark_lost()).
    void during_call(std::function<void()> f) { m_during = std::move(f); }
    /// Runs at the start of every wait_for_change().
    void before_wait(std::function<void()> f) { m_before_wait = std::move(f); }
    /// Calls made so far, by kind.
    [[nodiscard]] int acquires() const noexcept { return m_acquires; }
    [[nodiscard]] int renews() const noexcept { return m_renews; }
    [[nodiscard]] int waits() const noexcept { return m_waits; }
    [[nodiscard]] int statuses() const noexcept { return m_statuses; }

private:
    template <typename F>
    auto call(F&& body);
    /// block()/stall() for a call bounded by @p deadline; throws at it.
    void bounded_wait(clock::time_point deadline);

    fake_store& m_store;
    std::unique_ptr<backend> m_inner;
    fake_clock* m_fake;
    std::atomic<int> m_fail_before{0};
    std::atomic<int> m_fail_after{0};
    std::chrono::milliseconds m_latency{0};
    std::atomic<std::chrono::milliseconds::rep> m_hang{0};
    std::chrono::milliseconds m_block{0};
    std::atomic<std::chrono::milliseconds::rep> m_stall{0};
    std::function<void()> m_during;
    std::function<void()> m_before_wait;
    std::atomic<bool> m_interrupted{false};
    std::atomic<int> m_acquires{0};
    std::atomic<int> m_renews{0};
    std::atomic<int> m_waits{0};
    std::atomic<int> m_statuses{0};
};

} // namespace pglease::test
