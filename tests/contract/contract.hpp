/// @file contract.hpp
/// @brief The contract's cases (SPEC section 3) as data, and the one player
/// that runs them: given these leases and this call at this time, this
/// result or this SQLSTATE. Three runners play the same table, cases.json:
/// the C edition and the SQL edition (tests/client/test_pg_contract.cpp, on
/// every server the integration suite runs on) and the test double users
/// unit-test against (tests/client/test_contract_double.cpp). A rule changed
/// in one of them and not in the others fails a case.
#pragma once

#include "pglease/backend.hpp"

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace pglease::contract {

/// What a case is played against: a lease store, its time, its fence.
class target {
public:
    virtual ~target() = default;
    /// The session the calls go through (one connection).
    virtual backend& session() = 0;
    /// Time passes, at least @p d (the double's clock, or a real sleep).
    virtual void wait(std::chrono::milliseconds d) = 0;
    /// A write to a table fenced by lease @p name carrying @p epoch
    /// (lease_use): "" when it commits, else the SQLSTATE that refused it.
    virtual std::string fenced_write(const std::string& name, std::int64_t epoch) = 0;
};

/// One case of cases.json: its name, the rule of SPEC it states, its steps.
struct contract_case {
    std::string name;
    std::string rule;
    std::string steps; ///< JSON text of the steps
};

/// @p c's name as a test name (letters, digits and '_').
std::string test_name(const contract_case& c);

/// How GoogleTest prints a case (found by ADL): its name.
inline void PrintTo(const contract_case& c, std::ostream* os) {
    *os << c.name;
}

/// The table (cases.json, read from @p path).
std::vector<contract_case> load_cases(const std::string& path);

/// Plays @p c against @p t, the case's lease names made unique with
/// @p prefix. Returns what went against the contract, "" when nothing did.
std::string play(const contract_case& c, target& t, const std::string& prefix);

} // namespace pglease::contract
