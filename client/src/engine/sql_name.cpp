/// @file sql_name.cpp
/// @brief qualified_name(): a schema-qualified name as SQL text.
#include "pglease/internal/sql_name.hpp"

namespace pglease {

std::string qualified_name(const std::string& schema, const std::string& object) {
    if (schema.empty())
        return object;
    std::string quoted{'"'};
    for (const char c : schema) {
        if (c == '"')
            quoted += '"';
        quoted += c;
    }
    return quoted + "\"." + object;
}

} // namespace pglease
