/// @file downstream.hpp
/// @brief The downstream phase's second database: a table per lease fenced
/// by the lease's floor there (1.4), the commit order of its rows and of
/// the floors' raises, and reading them back for the checker (I2d).
#pragma once

#include "bundle.hpp"
#include "cluster.hpp"

#include <string>
#include <vector>

namespace fault {

/// The database the downstream phase creates on the store's cluster.
inline constexpr const char* downstream_dbname = "downstream";

/// Creates the downstream database on @p store's cluster (the lease
/// store's), installs pg_lease there (edition.hpp) and fences dw_<lease>
/// for each lease by the floor of (the store's lease_store_id(), lease).
/// Returns the downstream's connection string (app_user()'s).
std::string setup_downstream(const cluster& store, const std::vector<std::string>& leases);

/// Reads the downstream rows and raises into @p b.
void read_downstream(const std::string& conninfo, phase_bundle& b,
                     const std::vector<std::string>& leases);

} // namespace fault
