/// @file fake_downstream.hpp
/// @brief A downstream database (extension 1.4) for the unit tests: its
/// floors, and what the next raise does (latency on the fake clock, cut at
/// the caller's deadline; an answer that arrives late; unreachable).
#pragma once

#include "fake_clock.hpp"
#include "pglease/backend.hpp"
#include "pglease/error.hpp"

#include <functional>
#include <map>
#include <string>

namespace pglease::test {

/// A downstream database: its floors, and what the next raise does.
class fake_downstream final : public backend {
public:
    explicit fake_downstream(fake_clock& clk)
        : m_clock{clk} {}

    bool raise(const std::string& store, const std::string& name, std::int64_t epoch,
               clock::time_point deadline) override {
        ++raises;
        if (before_raise)
            before_raise();
        m_clock.advance(latency);
        if (m_clock.now() > deadline)
            throw error{"fake: canceling statement due to user request", "57014"};
        if (fail)
            throw connection_lost{"fake: downstream unreachable"};
        std::int64_t& floor = floors[store + "/" + name];
        if (floor > epoch)
            return false;
        floor = epoch;
        // The raise committed in time, but its answer took this long to
        // come back (a slow network, a cancel that arrived too late).
        m_clock.advance(late_answer);
        return true;
    }

    // The rest of the seam is not the downstream's business.
    acquire_reply acquire(const std::string&, const std::string&, std::chrono::milliseconds,
                          std::chrono::milliseconds, clock::time_point) override {
        throw error{"not a lease store"};
    }
    std::optional<std::chrono::microseconds> renew(const std::string&, const std::string&,
                                                   std::int64_t, std::chrono::milliseconds,
                                                   clock::time_point) override {
        throw error{"not a lease store"};
    }
    bool release(const std::string&, const std::string&, std::int64_t) override {
        throw error{"not a lease store"};
    }
    bool revoke(const std::string&) override { throw error{"not a lease store"}; }
    std::optional<lease_record> status(const std::string&) override {
        throw error{"not a lease store"};
    }
    bool listen() override { return false; }
    bool wait_for_change(const std::string&, clock::time_point) noexcept override { return false; }
    void interrupt() noexcept override {}

    std::map<std::string, std::int64_t> floors;
    std::chrono::milliseconds latency{0};
    std::chrono::milliseconds late_answer{0}; ///< after a raise that succeeded
    bool fail = false;
    int raises = 0;
    std::function<void()> before_raise;

private:
    fake_clock& m_clock;
};

} // namespace pglease::test
