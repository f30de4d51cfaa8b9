/// @file run_downstream.cpp
/// @brief `pglease run --downstream`: before the job starts, raise the
/// lease's floor in every downstream database (extension 1.4), so the job's
/// writes there are fenced against a paused old leader from its first one.
#include "common/common.hpp"
#include "run/run_supervisor.hpp"

#include <pglease/internal/downstream.hpp>

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
    std::vector<pglease::downstream_ref> refs;
    for (std::size_t i = 0; i < m_downstreams.size(); ++i)
        refs.push_back({m_downstreams[i].get(), "downstream \"" + m_a.downstreams[i] + "\""});
    // Within the grant's local deadline: past it the job could not start anyway.
    return pglease::raise_downstreams(
        m_db, refs, m_a.lease, m_lease.epoch(), m_lease.deadline(), pglease::system_clock(),
        [&](const pglease::downstream_ref& d) {
            info(m_g, "raised the floor of lease \"" + m_a.lease + "\" to epoch " +
                          std::to_string(m_lease.epoch()) + " in " + d.label);
        });
}

} // namespace pglease::cli
