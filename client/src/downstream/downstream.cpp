/// @file downstream.cpp
/// @brief The term-start raise of downstream floors (see downstream.hpp).
#include "pglease/internal/downstream.hpp"

#include "pglease/error.hpp"
#include "pglease/pq_backend.hpp"

namespace pglease {

std::string raise_downstreams(backend& store, const std::vector<downstream_ref>& downstreams,
                              const std::string& lease, std::int64_t epoch,
                              clock::time_point deadline, const clock& clk,
                              const std::function<void(const downstream_ref&)>& on_raised) {
    if (downstreams.empty())
        return {};
    std::string store_id;
    try {
        store_id = store.store_id(deadline); // one round trip per store connection
    } catch (const error& e) {
        return std::string{"the lease store's lease_store_id(): "} + e.what();
    }
    for (const downstream_ref& d : downstreams) {
        if (clk.now() >= deadline)
            return d.label + ": the grant's local deadline passed before its floor was raised";
        try {
            if (!d.db->raise(store_id, lease, epoch, deadline))
                return d.label + ": its floor is already above epoch " + std::to_string(epoch);
        } catch (const error& e) {
            return d.label + ": " + e.what();
        }
        if (on_raised)
            on_raised(d);
    }
    if (clk.now() >= deadline)
        return "the grant's local deadline passed while its downstream floors were raised";
    return {};
}

std::vector<downstream_ref> numbered_downstreams(const std::vector<backend*>& backends) {
    std::vector<downstream_ref> out;
    out.reserve(backends.size());
    for (std::size_t i = 0; i < backends.size(); ++i)
        out.push_back({backends[i], "downstream " + std::to_string(i + 1) + " of " +
                                        std::to_string(backends.size())});
    return out;
}

std::vector<downstream_ref>
numbered_downstreams(const std::vector<std::unique_ptr<backend>>& backends) {
    std::vector<backend*> raw;
    raw.reserve(backends.size());
    for (const auto& b : backends)
        raw.push_back(b.get());
    return numbered_downstreams(raw);
}

std::vector<std::unique_ptr<backend>>
downstream_backends(const std::vector<connection_options>& options) {
    std::vector<std::unique_ptr<backend>> out;
    out.reserve(options.size());
    for (const auto& o : options)
        out.push_back(std::make_unique<pq_backend>(o));
    return out;
}

} // namespace pglease
