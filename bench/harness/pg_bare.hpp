/// @file pg_bare.hpp
/// @brief The reference the lease figures are measured against: a table of
/// the leases' shape, and the three lease operations as one bare
/// UPDATE ... RETURNING each.
#pragma once

#include "pg.hpp"

#include <string>

namespace bench {

/// sql with every "%S" replaced by schema.
std::string subst(std::string sql, const std::string& schema);

/// Creates schema.leases, derived from the extension's table (ext: its
/// schema with a dot): the same columns, constraints, indexes and
/// fillfactor; and schema.epoch_seq.
void create_bare_leases(pg_session& db, const std::string& schema, const std::string& ext);

/// Prepares "acq" (name, holder, ttl), "ren" (name, holder, epoch) and
/// "rel" (name, holder, epoch): the extension's functions (ext: its schema
/// with a dot), or when bare the same operations on schema.leases.
void prepare_lease_statements(pg_session& db, bool bare, const std::string& ext,
                              const std::string& schema);

} // namespace bench
