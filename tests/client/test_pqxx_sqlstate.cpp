/// @file test_pqxx_sqlstate.cpp
/// @brief libpqxx 6.4 drops the SQLSTATE of some exception types; the
/// client restores it so the error tree maps them (e.g. 42501).
#include "pglease/error.hpp"
#include "pq/pqxx_sqlstate.hpp"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

namespace pglease::test {
namespace {

/// @p E as libpqxx makes it without a SQLSTATE (6.4 takes only the message,
/// 7 and 8 the message and the query).
template <typename E>
E without_code(const std::string& what) {
    if constexpr (std::is_constructible_v<E, const std::string&>)
        return E{what};
    else
        return E{what, std::string{}};
}

TEST(pqxx_sqlstate, restores_codes_libpqxx_leaves_out) {
    EXPECT_EQ(detail::sqlstate_of(without_code<pqxx::insufficient_privilege>("denied")), "42501");
    EXPECT_EQ(detail::sqlstate_of(without_code<pqxx::serialization_failure>("retry")), "40001");
    EXPECT_EQ(detail::sqlstate_of(without_code<pqxx::deadlock_detected>("deadlock")), "40P01");
    EXPECT_EQ(detail::sqlstate_of(without_code<pqxx::statement_completion_unknown>("?")), "40003");
    EXPECT_EQ(detail::sqlstate_of(without_code<pqxx::transaction_rollback>("rollback")), "40000");
}

TEST(pqxx_sqlstate, keeps_the_code_libpqxx_gives) {
    EXPECT_EQ(detail::sqlstate_of(pqxx::sql_error{"stale", "INSERT", "LS001"}), "LS001");
    EXPECT_EQ(detail::sqlstate_of(pqxx::insufficient_privilege{"denied", "q", "42501"}), "42501");
    EXPECT_EQ(detail::sqlstate_of(pqxx::failure{"other"}), "");
}

TEST(pqxx_sqlstate, a_restored_42501_maps_to_permission_denied) {
    EXPECT_THROW(
        throw_for_sqlstate(
            "denied", detail::sqlstate_of(without_code<pqxx::insufficient_privilege>("denied"))),
        permission_denied);
}

} // namespace
} // namespace pglease::test
