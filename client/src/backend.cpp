/// @file backend.cpp
/// @brief Defaults of the backend seam for calls added after 1.0.
#include "pglease/backend.hpp"

#include "pglease/error.hpp"

namespace pglease {

std::optional<std::int64_t> backend::handover(const std::string& name, const std::string&,
                                              std::int64_t, const std::string&) {
    throw error{"lease_handover: not supported by this backend (lease \"" + name + "\")"};
}

} // namespace pglease
