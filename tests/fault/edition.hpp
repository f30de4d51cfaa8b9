/// @file edition.hpp
/// @brief pg_lease in a cluster of the suite, in the run's edition
/// (cluster.hpp use_sql_edition): the C extension, or the SQL edition as a
/// managed service's customer installs it, checked to use no module.
#pragma once

#include "cluster.hpp"

#include <pqxx/transaction_base>

#include <string>
#include <vector>

namespace fault {

/// Installs pg_lease in @p c's app_db(). C: CREATE EXTENSION pg_lease as
/// the superuser. SQL edition: roles app_owner (no superuser; CREATEROLE,
/// CREATEDB, pg_signal_backend) and app_user, database app owned by
/// app_owner, the edition installed there by app_owner with psql -f, then
/// check_sql_edition().
void install_edition(const cluster& c);

/// Creates database @p db as owner_role() and installs pg_lease there the
/// same way (the downstream phase's second database).
void install_edition_in_new_db(const cluster& c, const std::string& db);

/// Throws unless database @p db of @p c has the SQL edition installed by
/// app_owner and nothing of pg_lease's module: no extension pg_lease, no
/// pg_lease in shared_preload_libraries, no function in C from a pg_lease
/// library, and neither app_owner nor app_user a superuser.
void check_sql_edition(const cluster& c, const std::string& db);

/// Grants app_user() what a worker needs on the suite's @p tables (all
/// DML and TRUNCATE), @p sequences (USAGE) and pg_lease's @p functions
/// that are not for everyone (EXECUTE: lease_raise). Nothing in C, whose
/// workers are the superuser.
void grant_to_app(pqxx::transaction_base& tx, const std::vector<std::string>& tables,
                  const std::vector<std::string>& sequences,
                  const std::vector<std::string>& functions = {});

/// pg_lease.takeover_timeout of database @p db: ALTER DATABASE (C, a
/// superuser setting) or the SQL edition's lease_sql_settings row.
void set_takeover_timeout(pqxx::transaction_base& tx, const std::string& db,
                          const std::string& value);

} // namespace fault
