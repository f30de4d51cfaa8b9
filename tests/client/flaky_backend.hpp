/// @file flaky_backend.hpp
/// @brief A session of the public test double whose calls can be made to
/// fail (outcome unknown), and that counts the many-lease round trips.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/error.hpp"

#include <atomic>
#include <memory>

namespace pglease::test {

/// Forwards to @p inner (a lease_store session). While `fail` is set, every
/// call that writes or reads the store throws connection_lost before it
/// reaches the store. renew_many, acquire_many and release_many each count
/// as one round trip.
class flaky_backend final : public backend {
public:
    explicit flaky_backend(std::unique_ptr<backend> inner)
        : m_inner{std::move(inner)} {}

    std::atomic<bool> fail{false};
    std::atomic<int> renew_many_calls{0};
    std::atomic<int> acquire_many_calls{0};
    std::atomic<int> release_many_calls{0};

    acquire_reply acquire(const std::string& n, const std::string& h, std::chrono::milliseconds t,
                          clock::time_point d) override {
        check();
        return m_inner->acquire(n, h, t, d);
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
                                            clock::time_point d) override {
        check();
        ++acquire_many_calls;
        return m_inner->acquire_many(n, h, t, d);
    }
    std::vector<bool> release_many(const std::vector<std::string>& n, const std::string& h,
                                   const std::vector<std::int64_t>& e,
                                   clock::time_point d) override {
        check();
        ++release_many_calls;
        return m_inner->release_many(n, h, e, d);
    }
    bool revoke(const std::string& n) override { return m_inner->revoke(n); }
    std::optional<lease_record> status(const std::string& n) override { return m_inner->status(n); }
    std::vector<lease_record> list(const std::string& p) override {
        check();
        return m_inner->list(p);
    }
    bool listen() override { return m_inner->listen(); }
    bool wait_for_change(const std::string& n, clock::time_point u) noexcept override {
        return m_inner->wait_for_change(n, u);
    }
    bool wait_for_prefix(const std::string& p, clock::time_point u) noexcept override {
        return m_inner->wait_for_prefix(p, u);
    }
    void interrupt() noexcept override { m_inner->interrupt(); }

private:
    void check() const {
        if (fail.load())
            throw connection_lost{"flaky_backend: connection lost"};
    }
    std::unique_ptr<backend> m_inner;
};

} // namespace pglease::test
