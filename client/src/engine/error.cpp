/// @file error.cpp
/// @brief SQLSTATE to exception mapping.
#include "pglease/error.hpp"

namespace pglease {

bool is_connection_sqlstate(const std::string& sqlstate) noexcept {
    if (sqlstate.size() != 5)
        return false;
    // Class 08: connection exception. 57P01 admin_shutdown (e.g.
    // pg_terminate_backend), 57P02 crash_shutdown, 57P03 cannot_connect_now.
    return sqlstate.compare(0, 2, "08") == 0 || sqlstate == "57P01" || sqlstate == "57P02" ||
           sqlstate == "57P03";
}

void throw_for_sqlstate(const std::string& what, const std::string& sqlstate) {
    if (sqlstate == "LS001" || sqlstate == "LS002")
        throw fence_rejected{what, sqlstate};
    if (sqlstate == "LS003")
        throw missing_token{what, sqlstate};
    if (sqlstate == "22023" || sqlstate == "22004")
        throw invalid_argument{what, sqlstate};
    if (sqlstate == "42501")
        throw permission_denied{what, sqlstate};
    if (is_connection_sqlstate(sqlstate))
        throw connection_lost{what, sqlstate};
    throw error{what, sqlstate};
}

} // namespace pglease
