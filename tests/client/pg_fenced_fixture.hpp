/// @file pg_fenced_fixture.hpp
/// @brief The fixture of the fenced-transaction suites (test_pg_fenced.cpp,
/// test_pg_fenced_block.cpp): a lease held by a fresh holder and a table it
/// fences.
#pragma once

#include "pg_fixture.hpp"
#include "pglease/lease.hpp"
#include "pglease/pq_backend.hpp"

#include "pglease/internal/pqxx_compat.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace pglease::test {

class pg_fenced : public pg_test {
protected:
    /// A lease held by a fresh holder, its token, and a table it fences.
    void SetUp() override {
        pg_test::SetUp();
        m_name = unique_name("fast");
        m_table = unique_name("fast_tbl");
        make_fenced_table(m_table, m_name);
        m_db = std::make_unique<pq_backend>(env_options("fenced-holder"));
        lease_options o;
        o.ttl = std::chrono::seconds{30};
        m_lease = std::make_unique<lease>(*m_db, m_name, o);
        ASSERT_TRUE(m_lease->acquire());
    }

    [[nodiscard]] std::string insert(const std::string& note) {
        return "INSERT INTO " + admin().quote_name(m_table) + " (note) VALUES ('" + note + "')";
    }

    [[nodiscard]] long rows() {
        pqxx::nontransaction q{admin()};
        return pqxx_compat::exec1(q, "SELECT count(*) FROM " + q.quote_name(m_table))[0].as<long>();
    }

    std::string m_name;
    std::string m_table;
    std::unique_ptr<pq_backend> m_db;
    std::unique_ptr<lease> m_lease;
};

} // namespace pglease::test
