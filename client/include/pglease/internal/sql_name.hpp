/// @file sql_name.hpp
/// @brief The name of an object of the extension's schema, as SQL text.
#pragma once

#include <string>

namespace pglease {

/// @p object qualified by @p schema, the schema quoted as an identifier
/// (double quotes, inner ones doubled), so any schema name is safe to
/// splice into SQL; an empty @p schema leaves @p object unqualified, found
/// through the session's search_path. @p object is not quoted: it is one
/// of the extension's own names.
///
/// @code
///   pglease::qualified_name("ops", "lease_status")   // "ops".lease_status
/// @endcode
[[nodiscard]] std::string qualified_name(const std::string& schema, const std::string& object);

} // namespace pglease
