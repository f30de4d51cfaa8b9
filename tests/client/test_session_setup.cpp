/// @file test_session_setup.cpp
/// @brief The session's setup: the statement_timeout backstop everywhere,
/// the client connection check only where the server knows it (14+).
#include "pq/session_setup.hpp"

#include <gtest/gtest.h>

namespace pglease::detail {
namespace {

using namespace std::chrono_literals;

TEST(session_setup, the_backstop_is_the_longer_of_the_call_and_acquire_bounds) {
    connection_options o;
    o.call_timeout = 2s;
    o.acquire_timeout = 7s;
    EXPECT_EQ(session_setup(o, 130000), "SET statement_timeout = 7000");
    o.call_timeout = 9s;
    EXPECT_EQ(session_setup(o, 130011), "SET statement_timeout = 9000");
}

TEST(session_setup, servers_from_14_check_that_the_client_is_still_there) {
    connection_options o;
    o.call_timeout = 2s;
    o.acquire_timeout = 5s;
    for (const int version : {140000, 150010, 180000})
        EXPECT_EQ(session_setup(o, version),
                  "SET statement_timeout = 5000; SET client_connection_check_interval = 1000")
            << version;
}

} // namespace
} // namespace pglease::detail
