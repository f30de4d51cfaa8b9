/// @file test_config.cpp
/// @brief Config validation (table), defaults, identities, connection
/// strings, SQLSTATE mapping. No server needed.
#include "pglease/elector_config.hpp"
#include "pglease/error.hpp"
#include "pglease/lease_options.hpp"

#include "pglease/internal/identity.hpp"
#include "pq/conninfo.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <functional>
#include <set>
#include <typeinfo>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;

elector_config valid_config() {
    elector_config c;
    c.lease_name = "cfg";
    c.callbacks.on_started_leading = [](std::int64_t, const stop_token&) {};
    c.callbacks.on_stopped_leading = [] {};
    return c;
}

TEST(elector_config, defaults_are_the_documented_ones) {
    const elector_config c;
    EXPECT_EQ(c.ttl, 15s);
    EXPECT_EQ(c.renew_deadline, 10s);
    EXPECT_EQ(c.retry_period, 2s);
    EXPECT_DOUBLE_EQ(c.jitter_factor, 1.2);
    EXPECT_EQ(c.effective_safety_margin(), 1s);
    EXPECT_EQ(c.renew_interval(), 5s);
    EXPECT_TRUE(c.release_on_stop);
    EXPECT_EQ(c.lock_delay, 0s);
    EXPECT_FALSE(c.identity.empty());
    EXPECT_NO_THROW(valid_config().validate());
}

struct bad_case {
    const char* name;
    std::function<void(elector_config&)> edit;
    const char* message; ///< substring of what()
};

TEST(elector_config, rejects_inconsistent_settings) {
    const std::vector<bad_case> cases = {
        {"empty lease name", [](auto& c) { c.lease_name.clear(); }, "lease name"},
        {"oversized lease name", [](auto& c) { c.lease_name.assign(256, 'x'); }, "255"},
        {"empty identity", [](auto& c) { c.identity.clear(); }, "identity"},
        {"ttl equal to renew deadline", [](auto& c) { c.ttl = c.renew_deadline; }, "ttl"},
        {"ttl below renew deadline", [](auto& c) { c.ttl = 5s; }, "ttl"},
        {"margin eats the gap", [](auto& c) { c.safety_margin = 5s; }, "safety margin"},
        {"renew deadline equal to retry x jitter",
         [](auto& c) {
             c.retry_period = 5s;
             c.jitter_factor = 2.0;
         },
         "retry period"},
        {"renew deadline below retry period", [](auto& c) { c.retry_period = 11s; }, "retry"},
        {"jitter below one", [](auto& c) { c.jitter_factor = 0.5; }, "jitter"},
        {"zero retry period", [](auto& c) { c.retry_period = 0s; }, "positive"},
        {"negative ttl", [](auto& c) { c.ttl = -1s; }, "positive"},
        {"negative lock delay", [](auto& c) { c.lock_delay = -1ms; }, "lock delay"},
        {"preferred successor is itself", [](auto& c) { c.preferred_successor = c.identity; },
         "preferred successor"},
        {"oversized preferred successor", [](auto& c) { c.preferred_successor.assign(256, 'x'); },
         "preferred successor"},
        {"no started callback", [](auto& c) { c.callbacks.on_started_leading = nullptr; },
         "on_started_leading"},
        {"no stopped callback", [](auto& c) { c.callbacks.on_stopped_leading = nullptr; },
         "on_stopped_leading"},
    };
    for (const auto& bc : cases) {
        SCOPED_TRACE(bc.name);
        elector_config c = valid_config();
        bc.edit(c);
        try {
            c.validate();
            ADD_FAILURE() << "accepted";
        } catch (const config_error& e) {
            EXPECT_NE(std::string{e.what()}.find(bc.message), std::string::npos) << e.what();
        }
    }
}

TEST(elector_config, on_new_leader_is_optional_and_short_timings_are_fine) {
    elector_config c = valid_config();
    c.callbacks.on_new_leader = nullptr;
    c.ttl = 1500ms;
    c.renew_deadline = 1000ms;
    c.retry_period = 200ms;
    EXPECT_NO_THROW(c.validate());
    EXPECT_EQ(c.effective_safety_margin(), 150ms);
    EXPECT_EQ(c.renew_interval(), 500ms);
}

TEST(lease_options, validation) {
    lease_options o;
    EXPECT_NO_THROW(o.validate());
    EXPECT_EQ(o.ttl, 15s);
    EXPECT_EQ(o.effective_safety_margin(), 1s);
    o.ttl = 2s;
    EXPECT_EQ(o.effective_safety_margin(), 200ms);
    o.safety_margin = 2s;
    EXPECT_THROW(o.validate(), config_error);
    o.safety_margin = -1ms;
    EXPECT_THROW(o.validate(), config_error);
    o.safety_margin.reset();
    o.identity.clear();
    EXPECT_THROW(o.validate(), config_error);
    o.identity = "x";
    o.ttl = 0s;
    EXPECT_THROW(o.validate(), config_error);
    o.ttl = 2s;
    o.lock_delay = -1ms;
    EXPECT_THROW(o.validate(), config_error);
    o.lock_delay = 30s; // longer than the ttl is fine (the server bounds it)
    EXPECT_NO_THROW(o.validate());
    EXPECT_THROW(validate_lease_name(std::string{"a\0b", 3}), config_error);
}

TEST(identity, default_identities_are_unique_and_name_host_and_pid) {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i)
        EXPECT_TRUE(seen.insert(default_identity()).second);
    const std::string id = default_identity();
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    EXPECT_EQ(id.rfind(host, 0), 0U) << id;
    EXPECT_NE(id.find(":" + std::to_string(::getpid()) + ":"), std::string::npos) << id;
    EXPECT_LE(id.size(), 255U);
}

TEST(conninfo, adds_bounds_and_keeps_what_the_caller_set) {
    connection_options o;
    o.call_timeout = 3000ms;
    const std::string empty = detail::build_conninfo(o);
    EXPECT_NE(empty.find("connect_timeout='3'"), std::string::npos) << empty;
    EXPECT_NE(empty.find("tcp_user_timeout='3000'"), std::string::npos) << empty;
    EXPECT_NE(empty.find("keepalives='1'"), std::string::npos) << empty;
    EXPECT_NE(empty.find("application_name='pglease'"), std::string::npos) << empty;
    EXPECT_EQ(empty.find("host="), std::string::npos) << "PG* variables must still apply";

    o.conninfo = "postgresql://alice@db.example:5433/app?connect_timeout=9";
    const std::string uri = detail::build_conninfo(o);
    EXPECT_NE(uri.find("host='db.example'"), std::string::npos) << uri;
    EXPECT_NE(uri.find("port='5433'"), std::string::npos) << uri;
    EXPECT_NE(uri.find("connect_timeout='9'"), std::string::npos) << uri;

    o.conninfo = "dbname=app password='a\\'b'";
    const std::string quoted = detail::build_conninfo(o);
    EXPECT_NE(quoted.find("password='a\\'b'"), std::string::npos) << quoted;

    o.conninfo = "host=x nonsense_key=1";
    EXPECT_THROW((void)detail::build_conninfo(o), config_error);
}

TEST(error, sqlstates_map_to_the_error_tree) {
    const auto type_of = [](const char* state) -> std::string {
        try {
            throw_for_sqlstate("x", state);
        } catch (const fence_rejected&) {
            return "fence_rejected";
        } catch (const lease_lost&) {
            return "lease_lost";
        } catch (const missing_token&) {
            return "missing_token";
        } catch (const invalid_argument&) {
            return "invalid_argument";
        } catch (const permission_denied&) {
            return "permission_denied";
        } catch (const connection_lost&) {
            return "connection_lost";
        } catch (const error& e) {
            return std::string{"error:"} + e.sqlstate();
        }
        return "none";
    };
    EXPECT_EQ(type_of("LS001"), "fence_rejected");
    EXPECT_EQ(type_of("LS002"), "fence_rejected");
    EXPECT_EQ(type_of("LS003"), "missing_token");
    EXPECT_EQ(type_of("22023"), "invalid_argument");
    EXPECT_EQ(type_of("22004"), "invalid_argument");
    EXPECT_EQ(type_of("42501"), "permission_denied");
    EXPECT_EQ(type_of("57P01"), "connection_lost");
    EXPECT_EQ(type_of("08006"), "connection_lost");
    EXPECT_EQ(type_of("57014"), "error:57014");

    try {
        throw_for_sqlstate("stale", "LS001");
    } catch (const lease_lost& e) { // fence_rejected is a lease_lost
        EXPECT_EQ(e.sqlstate(), "LS001");
        EXPECT_TRUE(dynamic_cast<const fence_rejected&>(e).stale_epoch());
    }
    static_assert(std::is_base_of_v<std::runtime_error, error>);
    static_assert(std::is_base_of_v<error, commit_unknown>);
    static_assert(std::is_base_of_v<error, config_error>);
}

} // namespace
} // namespace pglease::test
