/// @file pqxx_sqlstate.cpp
/// @brief Internal: the SQLSTATE of a libpqxx exception.
#include "pq/pqxx_sqlstate.hpp"

namespace pglease::detail {

std::string sqlstate_of(const pqxx::failure& e) {
    if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e); sql && !sql->sqlstate().empty())
        return std::string{sql->sqlstate()};
    if (dynamic_cast<const pqxx::insufficient_privilege*>(&e))
        return "42501";
    if (dynamic_cast<const pqxx::serialization_failure*>(&e))
        return "40001";
    if (dynamic_cast<const pqxx::deadlock_detected*>(&e))
        return "40P01";
    if (dynamic_cast<const pqxx::statement_completion_unknown*>(&e))
        return "40003";
    if (dynamic_cast<const pqxx::transaction_rollback*>(&e))
        return "40000";
    return {};
}

} // namespace pglease::detail
