/// @file test_pg_contract.cpp
/// @brief The contract's table (tests/contract/cases.json) played against
/// the server of the PG* environment: the C edition here, the SQL edition
/// where sql_edition.sh runs this binary (every major it runs on). The same
/// table runs against the test double in test_contract_double.cpp.
#include "contract.hpp"
#include "pg_fixture.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <map>
#include <thread>

namespace pglease::test {
namespace {

class server_target final : public contract::target {
public:
    server_target()
        : m_session{env_options("pglease-contract")}
        , m_conn{""} {}
    backend& session() override { return m_session; }
    void wait(std::chrono::milliseconds d) override { std::this_thread::sleep_for(d); }
    std::string fenced_write(const std::string& name, std::int64_t epoch) override {
        const std::string& table = fenced_table(name);
        try {
            pqxx::work tx{m_conn};
            pqxx_compat::exec_params(tx, "SELECT lease_use($1, $2)", name, epoch);
            pqxx_compat::exec_params(tx,
                                     "INSERT INTO " + tx.quote_name(table) +
                                         " (note, epoch) VALUES ('contract', $1)",
                                     epoch);
            tx.commit();
            return {};
        } catch (const pqxx::sql_error& e) {
            return std::string{e.sqlstate()}; // a string_view from libpqxx 8
        }
    }

private:
    /// A table fenced by lease @p name, made at its first write.
    const std::string& fenced_table(const std::string& name) {
        auto it = m_tables.find(name);
        if (it != m_tables.end())
            return it->second;
        const std::string table = unique_name("contract_f");
        pqxx::work tx{m_conn};
        tx.exec("CREATE TABLE " + tx.quote_name(table) +
                " (id serial PRIMARY KEY, note text, epoch bigint)");
        pqxx_compat::exec_params(tx, "SELECT lease_fence($1::regclass, $2)", table, name);
        tx.commit();
        return m_tables.emplace(name, table).first->second;
    }

    pq_backend m_session;
    pqxx::connection m_conn;
    std::map<std::string, std::string> m_tables;
};

class pg_contract : public pg_test,
                    public ::testing::WithParamInterface<contract::contract_case> {};

TEST_P(pg_contract, holds) {
    const contract::contract_case& c = GetParam();
    server_target t;
    EXPECT_EQ(contract::play(c, t, unique_name("c") + "-"), "") << c.name << ": " << c.rule;
}

INSTANTIATE_TEST_SUITE_P(cases, pg_contract,
                         ::testing::ValuesIn(contract::load_cases(PGLEASE_CONTRACT_CASES)),
                         [](const auto& param) { return contract::test_name(param.param); });

} // namespace
} // namespace pglease::test
