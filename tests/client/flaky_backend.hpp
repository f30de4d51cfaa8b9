/// @file flaky_backend.hpp
/// @brief A session of the public test double whose calls can be made to
/// fail (outcome unknown), and that counts the many-lease round trips.
#pragma once

#include "forwarding_backend.hpp"
#include "pglease/error.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pglease::test {

/// Forwards to @p inner (a lease_store session). While `fail` is set, every
/// call that writes or reads the store throws connection_lost before it
/// reaches the store. renew_many, acquire_many and release_many each count
/// as one round trip.
class flaky_backend final : public forwarding_backend {
public:
    explicit flaky_backend(std::unique_ptr<backend> inner)
        : forwarding_backend{std::move(inner)} {}

    std::atomic<bool> fail{false};
    std::atomic<int> fail_next{0}; ///< the next N calls fail as while `fail`
    std::atomic<int> renew_many_calls{0};
    std::atomic<int> acquire_many_calls{0};
    std::atomic<int> release_many_calls{0};
    std::atomic<int> listens{0};
    std::atomic<int> unlistens{0};
    /// Runs in listen(), before the subscription (set before start()).
    std::function<void()> before_listen;

    /// The names of the last acquire_many call.
    std::vector<std::string> last_acquired() const {
        const std::lock_guard lock{m_mutex};
        return m_last_acquired;
    }

    using backend::acquire;
    using backend::acquire_many;
    acquire_reply acquire(const std::string& n, const std::string& h, std::chrono::milliseconds t,
                          std::chrono::milliseconds ld, clock::time_point d) override {
        check();
        return m_inner->acquire(n, h, t, ld, d);
    }
    std::optional<std::chrono::microseconds> renew(const std::string& n, const std::string& h,
                                                   std::int64_t e, std::chrono::milliseconds t,
                                                   clock::time_point d) override {
        check();
        return m_inner->renew(n, h, e, t, d);
    }
    bool release(const std::string& n, const std::string& h, std::int64_t e) override {
        check();
        return m_inner->release(n, h, e);
    }
    std::vector<std::optional<std::chrono::microseconds>>
    renew_many(const std::vector<std::string>& n, const std::string& h,
               const std::vector<std::int64_t>& e, std::chrono::milliseconds t,
               clock::time_point d) override {
        check();
        ++renew_many_calls;
        return m_inner->renew_many(n, h, e, t, d);
    }
    std::vector<acquire_reply> acquire_many(const std::vector<std::string>& n, const std::string& h,
                                            std::chrono::milliseconds t,
                                            std::chrono::milliseconds ld,
                                            clock::time_point d) override {
        check();
        {
            const std::lock_guard lock{m_mutex};
            m_last_acquired = n;
        }
        ++acquire_many_calls;
        return m_inner->acquire_many(n, h, t, ld, d);
    }
    std::vector<bool> release_many(const std::vector<std::string>& n, const std::string& h,
                                   const std::vector<std::int64_t>& e,
                                   clock::time_point d) override {
        check();
        ++release_many_calls;
        return m_inner->release_many(n, h, e, d);
    }
    std::vector<lease_record> list(const std::string& p) override {
        check();
        return m_inner->list(p);
    }
    bool listen() override {
        ++listens;
        if (before_listen)
            before_listen();
        return m_inner->listen();
    }
    void unlisten() noexcept override {
        ++unlistens;
        m_inner->unlisten();
    }

private:
    bool take_one_failure() {
        int left = fail_next.load();
        while (left > 0 && !fail_next.compare_exchange_weak(left, left - 1)) {
        }
        return left > 0;
    }
    void check() {
        if (fail.load() || take_one_failure())
            throw connection_lost{"flaky_backend: connection lost"};
    }
    mutable std::mutex m_mutex;
    std::vector<std::string> m_last_acquired;
};

} // namespace pglease::test
