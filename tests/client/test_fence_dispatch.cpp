/// @file test_fence_dispatch.cpp
/// @brief Which transaction run_fenced() gives a callable: fenced_work
/// (BEGIN and lease_use in one round trip) whenever the callable can take
/// one, pqxx::work (lease_use on its own) for a pqxx::work& parameter.
#include "pglease/fence.hpp"

#include <gtest/gtest.h>

#include <type_traits>

namespace pglease::test {
namespace {

using detail::fenced_result_t;
using detail::takes_fenced_work;

const auto by_fenced_work = [](fenced_work&) {};
const auto by_dbtransaction = [](pqxx::dbtransaction&) { return 1; };
const auto by_transaction_base = [](pqxx::transaction_base&) { return std::string{}; };
const auto generic = [](auto& tx) { return tx.epoch(); };
const auto by_work = [](pqxx::work&) { return 2.0; };

static_assert(takes_fenced_work<decltype(by_fenced_work)>);
static_assert(takes_fenced_work<decltype(by_dbtransaction)>);
static_assert(takes_fenced_work<decltype(by_transaction_base)>);
static_assert(takes_fenced_work<decltype(generic)>);
static_assert(!takes_fenced_work<decltype(by_work)>);

static_assert(std::is_void_v<fenced_result_t<decltype(by_fenced_work)>>);
static_assert(std::is_same_v<fenced_result_t<decltype(by_dbtransaction)>, int>);
static_assert(std::is_same_v<fenced_result_t<decltype(by_transaction_base)>, std::string>);
static_assert(std::is_same_v<fenced_result_t<decltype(generic)>, std::int64_t>);
static_assert(std::is_same_v<fenced_result_t<decltype(by_work)>, double>);

TEST(fence_dispatch, callables_that_can_take_a_fenced_work_get_one) {
    EXPECT_TRUE(takes_fenced_work<decltype(by_transaction_base)>);
    EXPECT_FALSE(takes_fenced_work<decltype(by_work)>);
}

// A fenced_work is a pqxx::dbtransaction, so code written against
// libpqxx's transaction interfaces takes it as it is.
static_assert(std::is_base_of_v<pqxx::dbtransaction, fenced_work>);
static_assert(std::is_base_of_v<pqxx::transaction_base, fenced_work>);
static_assert(!std::is_copy_constructible_v<fenced_work>);

} // namespace
} // namespace pglease::test
