/// @file test_contract_double.cpp
/// @brief The contract's table (tests/contract/cases.json) played against
/// the test double users unit-test against (pglease::testing::lease_store,
/// time on its manual clock). The same table runs against both editions in
/// test_pg_contract.cpp: a rule changed in one copy only fails a case.
#include "contract.hpp"
#include "pglease/error.hpp"
#include "pglease/testing.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace pglease::test {
namespace {

class double_target final : public contract::target {
public:
    double_target()
        : m_session{m_store.connect()} {}
    backend& session() override { return *m_session; }
    void wait(std::chrono::milliseconds d) override { m_store.advance(d); }
    std::string fenced_write(const std::string& name, std::int64_t epoch) override {
        try {
            m_store.fence_check({name, epoch, {}});
            return {};
        } catch (const fence_rejected& e) {
            return e.sqlstate();
        }
    }

private:
    pglease::testing::lease_store m_store;
    std::unique_ptr<backend> m_session;
};

class contract_double : public ::testing::TestWithParam<contract::contract_case> {};

TEST_P(contract_double, holds) {
    const contract::contract_case& c = GetParam();
    double_target t;
    EXPECT_EQ(contract::play(c, t, "c-"), "") << c.name << ": " << c.rule;
}

INSTANTIATE_TEST_SUITE_P(cases, contract_double,
                         ::testing::ValuesIn(contract::load_cases(PGLEASE_CONTRACT_CASES)),
                         [](const auto& param) { return contract::test_name(param.param); });

} // namespace
} // namespace pglease::test
