/// @file slow_backend.hpp
/// @brief A session of the test store whose calls take a visible time on
/// the store's manual clock (tests of many-lease round trips).
#pragma once

#include "forwarding_backend.hpp"
#include "pglease/error.hpp"
#include "pglease/testing.hpp"

#include <algorithm>
#include <memory>
#include <vector>

namespace pglease {

/// A session of the store whose many-lease calls (and single acquires)
/// take a visible time: the store's clock moves by `there` before the
/// store runs the call and by `back` after it answered.
class slow_backend final : public test::forwarding_backend {
public:
    slow_backend(testing::lease_store& store, std::unique_ptr<backend> inner)
        : forwarding_backend{std::move(inner)}
        , m_store{store} {}

    clock::duration there{0};
    clock::duration back{0};
    int renew_many_calls = 0;
    int acquire_many_calls = 0;
    /// The store's time an acquire_many takes per name (a loaded server),
    /// and the bound pq_backend adds to the caller's (acquire_timeout). A
    /// call that cannot end by its bound is cancelled there: nothing
    /// granted, 57014.
    clock::duration per_acquire_name{0};
    clock::duration acquire_bound = clock::duration::max();
    /// The store's time a renew_many takes after the server renewed (the
    /// reply of a loaded server: the renewal counts from before it).
    clock::duration renew_reply{0};
    std::vector<std::size_t> acquire_batches;
    int cancelled = 0;
    /// An acquire of a lease another holder's expired grant still names
    /// waits out its deadline, then fails a little later (a takeover
    /// waiting for a stalled writer's transaction on the server,
    /// pg_lease.takeover_timeout, ended by a cancel at the deadline).
    bool stall_takeovers = false;
    int stalled = 0;

    /// Runs @p call with the store's clock moved by `there` before and
    /// `back` after it.
    template <typename F>
    auto slowly(F&& call) -> decltype(call()) {
        if (there > clock::duration::zero())
            m_store.advance(there);
        auto reply = call();
        if (back > clock::duration::zero())
            m_store.advance(back);
        return reply;
    }

    using backend::acquire;
    using backend::acquire_many;
    acquire_reply acquire(const std::string& n, const std::string& h, std::chrono::milliseconds t,
                          std::chrono::milliseconds ld, clock::time_point d) override {
        if (stall_takeovers) {
            const auto row = m_inner->status(n);
            if (row && !row->holder.empty() && row->holder != h && !row->valid) {
                ++stalled;
                m_store.advance(d - m_store.clock().now() + cancel_latency);
                throw error{"canceling statement due to statement timeout", "57014"};
            }
        }
        return slowly([&] { return m_inner->acquire(n, h, t, ld, d); });
    }
    static constexpr auto cancel_latency = std::chrono::milliseconds{10};
    std::optional<std::chrono::microseconds> renew(const std::string& n, const std::string& h,
                                                   std::int64_t e, std::chrono::milliseconds t,
                                                   clock::time_point d) override {
        return slowly([&] { return m_inner->renew(n, h, e, t, d); });
    }
    std::vector<std::optional<std::chrono::microseconds>>
    renew_many(const std::vector<std::string>& n, const std::string& h,
               const std::vector<std::int64_t>& e, std::chrono::milliseconds t,
               clock::time_point d) override {
        ++renew_many_calls;
        if (m_store.clock().now() >= d) // as pq_backend: nothing sent
            throw error{"lease_renew_many: not sent: no time left"};
        auto reply = slowly([&] { return m_inner->renew_many(n, h, e, t, d); });
        if (renew_reply > clock::duration::zero())
            m_store.advance(renew_reply);
        return reply;
    }
    std::vector<acquire_reply> acquire_many(const std::vector<std::string>& n, const std::string& h,
                                            std::chrono::milliseconds t,
                                            std::chrono::milliseconds ld,
                                            clock::time_point d) override {
        ++acquire_many_calls;
        acquire_batches.push_back(n.size());
        const auto now = m_store.clock().now();
        const auto until =
            acquire_bound == clock::duration::max() ? d : std::min(d, now + acquire_bound);
        const auto cost = there + per_acquire_name * static_cast<long>(n.size());
        if (now + cost > until) {
            ++cancelled;
            m_store.advance(until - now + cancel_latency);
            throw error{"canceling statement due to statement timeout", "57014"};
        }
        if (per_acquire_name > clock::duration::zero())
            m_store.advance(per_acquire_name * static_cast<long>(n.size()));
        return slowly([&] { return m_inner->acquire_many(n, h, t, ld, d); });
    }

private:
    testing::lease_store& m_store;
};

} // namespace pglease
