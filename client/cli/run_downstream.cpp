/// @file run_downstream.cpp
/// @brief `pglease run --downstream`: before the job starts, raise the
/// lease's floor in every downstream database (extension 1.4), so the job's
/// writes there are fenced against a paused old leader from its first one.
#include "common.hpp"
#include "run_supervisor.hpp"

#include <pglease/error.hpp>

namespace pglease::cli {

std::string supervisor::raise_downstreams() {
    if (m_a.downstreams.empty())
        return {};
    if (m_downstreams.empty())
        for (const std::string& conninfo : m_a.downstreams) {
            pglease::connection_options o = make_connection_options(m_g, m_a.timing.call_timeout);
            o.conninfo = conninfo;
            m_downstreams.push_back(std::make_unique<pglease::pq_backend>(o));
        }
    // Within the grant's local deadline: past it the job could not start anyway.
    const auto deadline = m_lease.deadline();
    std::string store;
    try {
        store = m_db.store_id(deadline); // one round trip per store connection
    } catch (const pglease::error& e) {
        return std::string{"the lease store's lease_store_id(): "} + e.what();
    }
    for (std::size_t i = 0; i < m_downstreams.size(); ++i) {
        const std::string which = "downstream \"" + m_a.downstreams[i] + "\"";
        if (steady::now() >= deadline)
            return which + ": the lease's local deadline passed before its floor was raised";
        try {
            if (!m_downstreams[i]->raise(store, m_a.lease, m_lease.epoch(), deadline))
                return which + ": its floor is already above epoch " +
                       std::to_string(m_lease.epoch());
            info(m_g, "raised the floor of lease \"" + m_a.lease + "\" to epoch " +
                          std::to_string(m_lease.epoch()) + " in " + which);
        } catch (const pglease::error& e) {
            return which + ": " + e.what();
        }
    }
    if (steady::now() >= deadline)
        return "the lease's local deadline passed while its downstream floors were raised";
    return {};
}

} // namespace pglease::cli
