/// @file backend.cpp
/// @brief Defaults of the backend seam for calls added after 1.0 (the many-lease
/// calls built from the single ones).
#include "pglease/backend.hpp"

#include "pglease/error.hpp"

namespace pglease {

void backend::require_epoch_per_name(const char* call, const std::vector<std::string>& names,
                                     const std::vector<std::int64_t>& epochs) {
    if (names.size() != epochs.size())
        throw invalid_argument{std::string{call} + ": names and epochs must have the same length"};
}

std::vector<std::optional<std::chrono::microseconds>>
backend::renew_many(const std::vector<std::string>& names, const std::string& holder,
                    const std::vector<std::int64_t>& epochs, std::chrono::milliseconds ttl,
                    clock::time_point deadline) {
    require_epoch_per_name("renew_many", names, epochs);
    std::vector<std::optional<std::chrono::microseconds>> out;
    out.reserve(names.size());
    for (std::size_t i = 0; i < names.size(); ++i)
        out.push_back(renew(names[i], holder, epochs[i], ttl, deadline));
    return out;
}

std::vector<acquire_reply> backend::acquire_many(const std::vector<std::string>& names,
                                                 const std::string& holder,
                                                 std::chrono::milliseconds ttl,
                                                 std::chrono::milliseconds lock_delay,
                                                 clock::time_point deadline) {
    std::vector<acquire_reply> out;
    out.reserve(names.size());
    for (const std::string& name : names)
        out.push_back(acquire(name, holder, ttl, lock_delay, deadline));
    return out;
}

std::vector<bool> backend::release_many(const std::vector<std::string>& names,
                                        const std::string& holder,
                                        const std::vector<std::int64_t>& epochs,
                                        clock::time_point /*deadline*/) {
    require_epoch_per_name("release_many", names, epochs);
    std::vector<bool> out;
    out.reserve(names.size());
    for (std::size_t i = 0; i < names.size(); ++i)
        out.push_back(release(names[i], holder, epochs[i]));
    return out;
}

std::vector<lease_record> backend::list(const std::string& /*prefix*/) {
    throw error{"this backend cannot list leases"};
}

bool backend::wait_for_prefix(const std::string& prefix, clock::time_point until) noexcept {
    return wait_for_change(prefix, until);
}

bool backend::wait_for_free(const std::set<std::string>& /*names*/, clock::time_point until,
                            std::vector<std::string>& /*freed*/) noexcept {
    return wait_for_change(std::string{}, until); // no lease has an empty name
}

void backend::unlisten() noexcept {}

bool backend::take_handover_hint(const std::string& /*name*/,
                                 const std::string& /*holder*/) noexcept {
    return false;
}

std::optional<lease_record> backend::status_if_durable(const std::string& /*name*/) {
    return std::nullopt;
}

std::optional<std::int64_t> backend::handover(const std::string& name, const std::string&,
                                              std::int64_t, const std::string&) {
    throw error{"lease_handover: not supported by this backend (lease \"" + name + "\")"};
}

std::string backend::store_id(clock::time_point) {
    throw error{"lease_store_id: not supported by this backend"};
}

bool backend::raise(const std::string&, const std::string& name, std::int64_t, clock::time_point) {
    throw error{"lease_raise: not supported by this backend (lease \"" + name + "\")"};
}

} // namespace pglease
