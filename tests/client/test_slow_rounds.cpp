/// @file test_slow_rounds.cpp
/// @brief Many-lease round trips that take a visible time (issue 27, item
/// 4): a lease set and a group member count each lease's local deadline
/// from the time the round was *sent*, as the single lease does, never
/// from the time the store ran it or the reply arrived:
/// deadline = send + ttl - safety margin.
///
/// The store's manual clock moves inside the call: `there` on the way to
/// the store (the server starts the ttl later than the send), `back` on
/// the way back (the reply arrives later still). Each test reads held() at
/// one tick before and at the expected deadline, without stepping (a step
/// could renew and move it).
#include "pglease/backend.hpp"
#include "pglease/group.hpp"
#include "pglease/lease_set_state.hpp"
#include "pglease/testing.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace pglease {
namespace {

using namespace std::chrono_literals;
using testing::lease_store;

/// A session of the store whose many-lease calls (and single acquires)
/// take a visible time: the store's clock moves by `there` before the
/// store runs the call and by `back` after it answered.
class slow_backend final : public backend {
public:
    slow_backend(lease_store& store, std::unique_ptr<backend> inner)
        : m_store{store}
        , m_inner{std::move(inner)} {}

    clock::duration there{0};
    clock::duration back{0};
    int renew_many_calls = 0;
    int acquire_many_calls = 0;
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

    acquire_reply acquire(const std::string& n, const std::string& h, std::chrono::milliseconds t,
                          clock::time_point d) override {
        if (stall_takeovers) {
            const auto row = m_inner->status(n);
            if (row && !row->holder.empty() && row->holder != h && !row->valid) {
                ++stalled;
                m_store.advance(d - m_store.clock().now() + cancel_latency);
                throw error{"canceling statement due to statement timeout", "57014"};
            }
        }
        return slowly([&] { return m_inner->acquire(n, h, t, d); });
    }
    static constexpr auto cancel_latency = std::chrono::milliseconds{10};
    std::optional<std::chrono::microseconds> renew(const std::string& n, const std::string& h,
                                                   std::int64_t e, std::chrono::milliseconds t,
                                                   clock::time_point d) override {
        return slowly([&] { return m_inner->renew(n, h, e, t, d); });
    }
    bool release(const std::string& n, const std::string& h, std::int64_t e) override {
        return m_inner->release(n, h, e);
    }
    std::vector<std::optional<std::chrono::microseconds>>
    renew_many(const std::vector<std::string>& n, const std::string& h,
               const std::vector<std::int64_t>& e, std::chrono::milliseconds t,
               clock::time_point d) override {
        ++renew_many_calls;
        return slowly([&] { return m_inner->renew_many(n, h, e, t, d); });
    }
    std::vector<acquire_reply> acquire_many(const std::vector<std::string>& n, const std::string& h,
                                            std::chrono::milliseconds t,
                                            clock::time_point d) override {
        ++acquire_many_calls;
        return slowly([&] { return m_inner->acquire_many(n, h, t, d); });
    }
    std::vector<bool> release_many(const std::vector<std::string>& n, const std::string& h,
                                   const std::vector<std::int64_t>& e,
                                   clock::time_point d) override {
        return m_inner->release_many(n, h, e, d);
    }
    bool revoke(const std::string& n) override { return m_inner->revoke(n); }
    std::optional<lease_record> status(const std::string& n) override { return m_inner->status(n); }
    std::vector<lease_record> list(const std::string& p) override { return m_inner->list(p); }
    bool listen() override { return m_inner->listen(); }
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

private:
    lease_store& m_store;
    std::unique_ptr<backend> m_inner;
};

// ttl 15 s, margin 1 s (the default: ttl / 10, at most 1 s): deadline =
// send + 14 s. The round takes 300 ms there and 400 ms back.
constexpr auto ttl = 15s;
constexpr auto local_validity = 14s;
constexpr auto there = 300ms;
constexpr auto back = 400ms;

lease_set_config set_config() {
    lease_set_config c;
    c.names = {"slow/a", "slow/b", "slow/c"};
    c.identity = "set";
    c.ttl = ttl;
    c.renew_deadline = 10s;
    c.retry_period = 2s;
    return c;
}

/// Advances the store's clock to @p t (never backwards).
void advance_to(lease_store& store, clock::time_point t) {
    const auto now = store.clock().now();
    ASSERT_LE(now, t);
    if (t > now)
        store.advance(t - now);
}

TEST(slow_rounds, lease_set_acquire_many_deadline_counts_from_the_send) {
    lease_store store;
    slow_backend db{store, store.connect()};
    db.there = there;
    db.back = back;
    lease_set_state state{db, set_config(), store.clock(), 7};

    const auto sent = store.clock().now();
    (void)state.step();
    ASSERT_EQ(db.acquire_many_calls, 1);
    ASSERT_EQ(state.held_count(), 3U);
    // The reply came 700 ms after the send.
    EXPECT_EQ(store.clock().now(), sent + there + back);

    advance_to(store, sent + local_validity - 1ms);
    for (const auto& n : set_config().names)
        EXPECT_TRUE(state.held(n)) << n << ": held until send + ttl - margin";
    advance_to(store, sent + local_validity);
    for (const auto& n : set_config().names)
        EXPECT_FALSE(state.held(n)) << n << ": still held at send + ttl - margin (deadline "
                                    << "counted from the store's time or the reply's)";
}

TEST(slow_rounds, lease_set_renew_many_deadline_counts_from_the_send) {
    lease_store store;
    slow_backend db{store, store.connect()};
    lease_set_state state{db, set_config(), store.clock(), 7};
    (void)state.step();
    ASSERT_EQ(state.held_count(), 3U);

    // The renewal is due at renew_interval (5 s); that round is slow.
    db.there = there;
    db.back = back;
    advance_to(store, state.next_step());
    const auto sent = store.clock().now();
    (void)state.step();
    ASSERT_EQ(db.renew_many_calls, 1);
    ASSERT_EQ(state.renew_rounds(), 1U);
    EXPECT_EQ(store.clock().now(), sent + there + back);

    advance_to(store, sent + local_validity - 1ms);
    for (const auto& n : set_config().names)
        EXPECT_TRUE(state.held(n)) << n << ": held until send + ttl - margin";
    advance_to(store, sent + local_validity);
    for (const auto& n : set_config().names)
        EXPECT_FALSE(state.held(n)) << n << ": still held at send + ttl - margin (deadline "
                                    << "counted from the store's time or the reply's)";
}

group_config member_config() {
    group_config c;
    c.group = "slow";
    c.shards = numbered_shards("slow", 3);
    c.identity = "m";
    c.ttl = ttl;
    c.renew_deadline = 10s;
    c.retry_period = 2s;
    return c;
}

TEST(slow_rounds, group_member_renew_many_deadline_counts_from_the_send) {
    lease_store store;
    slow_backend db{store, store.connect()};
    group_state state{db, member_config(), store.clock(), 1};
    (void)state.step();
    ASSERT_TRUE(state.joined());
    ASSERT_EQ(state.owned().size(), 3U);

    db.there = there;
    db.back = back;
    const auto rounds = state.renew_rounds();
    // Step at each due time until the first renew round ran (the member
    // may read the group before it): that round is the slow one.
    clock::time_point sent{};
    for (int i = 0; i < 20 && state.renew_rounds() == rounds; ++i) {
        advance_to(store, state.next_step());
        sent = store.clock().now();
        (void)state.step();
    }
    ASSERT_EQ(state.renew_rounds(), rounds + 1);

    advance_to(store, sent + local_validity - 1ms);
    EXPECT_TRUE(state.joined()) << "membership held until send + ttl - margin";
    for (const auto& s : member_config().shards)
        EXPECT_TRUE(state.holds(s)) << s << ": held until send + ttl - margin";
    advance_to(store, sent + local_validity);
    EXPECT_FALSE(state.joined()) << "membership still held at send + ttl - margin";
    for (const auto& s : member_config().shards)
        EXPECT_FALSE(state.holds(s)) << s << ": still held at send + ttl - margin (deadline "
                                     << "counted from the store's time or the reply's)";
}

TEST(slow_rounds, a_group_takeover_that_waits_out_its_bound_leaves_time_to_renew) {
    lease_store store;
    slow_backend db{store, store.connect()};
    group_state state{db, member_config(), store.clock(), 1};
    (void)state.step();
    ASSERT_EQ(state.owned().size(), 3U);
    // A second member joins and takes its share, then stops stepping
    // (SIGSTOP) with, as far as takeovers can tell, a fenced transaction
    // open on each of its shards.
    const auto other_db = store.connect();
    group_config other_config = member_config();
    other_config.identity = "stalled";
    group_state other{*other_db, other_config, store.clock(), 2};
    // Work stops at once when a shard moves.
    const auto step = [](group_state& g) {
        for (const group_event& e : g.step())
            if (e.what == group_event::kind::shard_stopping)
                g.work_stopped(e.shard);
    };
    for (int i = 0; i < 50 && other.owned().empty(); ++i) {
        advance_to(store, std::min(state.next_step(), other.next_step()));
        step(state);
        step(other);
    }
    ASSERT_FALSE(other.owned().empty());
    const auto kept = state.owned();
    ASSERT_FALSE(kept.empty());

    // Its grants expire; the first member takes them over, each acquire
    // waiting until its bound.
    db.stall_takeovers = true;
    for (int i = 0; i < 50 && db.stalled == 0; ++i) {
        advance_to(store, state.next_step());
        step(state);
    }
    ASSERT_EQ(db.stalled, 1) << "no takeover was tried";
    advance_to(store, state.next_step());
    step(state);
    for (const auto& s : kept)
        EXPECT_TRUE(state.holds(s)) << s << ": lost, the takeover's wait used the renew deadline";
}

} // namespace
} // namespace pglease
