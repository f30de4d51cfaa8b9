/// @file test_fence_dispatch.cpp
/// @brief Which transaction run_fenced() gives a callable: the fenced block
/// (BEGIN and the token in one round trip, a pqxx::nontransaction) when
/// the callable takes a pqxx::transaction_base& or auto&; pqxx::work
/// (lease_use on its own) for a pqxx::work& or pqxx::dbtransaction&.
#include "pglease/fence.hpp"

#include <gtest/gtest.h>

#include <type_traits>

namespace pglease::test {
namespace {

using detail::fenced_result_t;
using detail::takes_fenced_work;

// Used in unevaluated contexts only.
[[maybe_unused]] const auto by_dbtransaction = [](pqxx::dbtransaction&) { return 1; };
[[maybe_unused]] const auto by_transaction_base = [](pqxx::transaction_base&) {
    return std::string{};
};
[[maybe_unused]] const auto generic = [](auto& tx) { return tx.name(); };
[[maybe_unused]] const auto by_work = [](pqxx::work&) { return 2.0; };

static_assert(takes_fenced_work<decltype(by_transaction_base)>);
static_assert(takes_fenced_work<decltype(generic)>);
static_assert(!takes_fenced_work<decltype(by_dbtransaction)>);
static_assert(!takes_fenced_work<decltype(by_work)>);

static_assert(std::is_same_v<fenced_result_t<decltype(by_dbtransaction)>, int>);
static_assert(std::is_same_v<fenced_result_t<decltype(by_transaction_base)>, std::string>);
static_assert(std::is_same_v<fenced_result_t<decltype(by_work)>, double>);

// Code written for pg_lease 1.4's fenced_work& keeps compiling (with a
// deprecation warning): it names the block's transaction type now.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
[[maybe_unused]] const auto by_fenced_work = [](fenced_work&) {};
static_assert(takes_fenced_work<decltype(by_fenced_work)>);
static_assert(std::is_void_v<fenced_result_t<decltype(by_fenced_work)>>);
static_assert(std::is_base_of_v<pqxx::transaction_base, fenced_work>);
#pragma GCC diagnostic pop

TEST(fence_dispatch, callables_that_take_a_transaction_base_get_the_fenced_block) {
    EXPECT_TRUE(takes_fenced_work<decltype(by_transaction_base)>);
    EXPECT_FALSE(takes_fenced_work<decltype(by_work)>);
}

} // namespace
} // namespace pglease::test
