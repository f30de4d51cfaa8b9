/// @file forwarding_backend.hpp
/// @brief A backend that forwards every call to another (a lease_store
/// session): the base of the test doubles that change a few calls
/// (flaky_backend, slow_backend) and keep the rest as they are.
#pragma once

#include "pglease/backend.hpp"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace pglease::test {

class forwarding_backend : public backend {
public:
    explicit forwarding_backend(std::unique_ptr<backend> inner)
        : m_inner{std::move(inner)} {}

    using backend::acquire;
    using backend::acquire_many;
    acquire_reply acquire(const std::string& n, const std::string& h, std::chrono::milliseconds t,
                          std::chrono::milliseconds ld, clock::time_point d) override {
        return m_inner->acquire(n, h, t, ld, d);
    }
    std::optional<std::chrono::microseconds> renew(const std::string& n, const std::string& h,
                                                   std::int64_t e, std::chrono::milliseconds t,
                                                   clock::time_point d) override {
        return m_inner->renew(n, h, e, t, d);
    }
    bool release(const std::string& n, const std::string& h, std::int64_t e) override {
        return m_inner->release(n, h, e);
    }
    std::vector<std::optional<std::chrono::microseconds>>
    renew_many(const std::vector<std::string>& n, const std::string& h,
               const std::vector<std::int64_t>& e, std::chrono::milliseconds t,
               clock::time_point d) override {
        return m_inner->renew_many(n, h, e, t, d);
    }
    std::vector<acquire_reply> acquire_many(const std::vector<std::string>& n, const std::string& h,
                                            std::chrono::milliseconds t,
                                            std::chrono::milliseconds ld,
                                            clock::time_point d) override {
        return m_inner->acquire_many(n, h, t, ld, d);
    }
    std::vector<bool> release_many(const std::vector<std::string>& n, const std::string& h,
                                   const std::vector<std::int64_t>& e,
                                   clock::time_point d) override {
        return m_inner->release_many(n, h, e, d);
    }
    bool revoke(const std::string& n) override { return m_inner->revoke(n); }
    std::optional<std::int64_t> handover(const std::string& n, const std::string& h, std::int64_t e,
                                         const std::string& s) override {
        return m_inner->handover(n, h, e, s);
    }
    bool take_handover_hint(const std::string& n, const std::string& h) noexcept override {
        return m_inner->take_handover_hint(n, h);
    }
    std::optional<lease_record> status(const std::string& n) override { return m_inner->status(n); }
    std::optional<lease_record> status_if_durable(const std::string& n) override {
        return m_inner->status_if_durable(n);
    }
    std::vector<lease_record> list(const std::string& p) override { return m_inner->list(p); }
    bool listen() override { return m_inner->listen(); }
    void unlisten() noexcept override { m_inner->unlisten(); }
    bool wait_for_change(const std::string& n, clock::time_point u) noexcept override {
        return m_inner->wait_for_change(n, u);
    }
    bool wait_for_prefix(const std::string& p, clock::time_point u) noexcept override {
        return m_inner->wait_for_prefix(p, u);
    }
    bool wait_for_free(const std::set<std::string>& n, clock::time_point u,
                       std::vector<std::string>& f) noexcept override {
        return m_inner->wait_for_free(n, u, f);
    }
    void interrupt() noexcept override { m_inner->interrupt(); }

protected:
    std::unique_ptr<backend> m_inner;
};

} // namespace pglease::test
