/// @file cmd_fence.cpp
/// @brief `pglease fence TABLE --lease NAME [--column C]`, `pglease unfence TABLE`.
#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "pglease/internal/pqxx_compat.hpp"

#include <pqxx/pqxx>

namespace pglease::cli {

int cmd_fence(const global_options& g, const std::string& table, const std::string& lease,
              const std::string& column) {
    try {
        pqxx::connection conn{plain_conninfo(g)};
        pqxx::nontransaction tx{conn};
        pqxx_compat::exec_params(
            tx, "SELECT " + qualified(g, "lease_fence") + "($1::text::regclass, $2, $3::name)",
            table, lease, column);
        info(g, "table " + table + " is fenced by lease \"" + lease + "\" (epoch column " + column +
                    ")");
        return exit_ok;
    } catch (const std::exception& e) {
        return report_error(e);
    }
}

int cmd_unfence(const global_options& g, const std::string& table) {
    try {
        pqxx::connection conn{plain_conninfo(g)};
        pqxx::nontransaction tx{conn};
        pqxx_compat::exec_params(
            tx, "SELECT " + qualified(g, "lease_unfence") + "($1::text::regclass)", table);
        info(g, "table " + table + " is no longer fenced");
        return exit_ok;
    } catch (const std::exception& e) {
        return report_error(e);
    }
}

} // namespace pglease::cli
