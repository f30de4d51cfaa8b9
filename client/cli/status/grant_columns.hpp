/// @file grant_columns.hpp
/// @brief Reading the grant columns that both status queries select.
#pragma once

#include <pqxx/pqxx>

#include <chrono>
#include <cstdint>
#include <string>

namespace pglease::cli {

/// Columns 1-4 of a status row (holder, epoch, valid, remaining in ms), as
/// `status` and `status --group` select them, into any row with those
/// fields (status_row, group_shard_row). @p r is a pqxx::row, or libpqxx
/// 8's row_ref.
template <typename Source, typename Row>
void read_grant_columns(const Source& r, Row& out) {
    if (!r[1].is_null())
        out.holder = r[1].template as<std::string>();
    out.epoch = r[2].template as<std::int64_t>();
    out.valid = r[3].template as<bool>();
    out.remaining = std::chrono::milliseconds{r[4].template as<long long>()};
}

} // namespace pglease::cli
