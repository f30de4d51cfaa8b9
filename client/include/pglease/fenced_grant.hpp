/// @file fenced_grant.hpp
/// @brief Fenced work on one lease of an owner of many (group_member,
/// lease_set): the shared part of their run_fenced().
#pragma once

#include "pglease/backend.hpp"
#include "pglease/error.hpp"
#include "pglease/lease.hpp"

#include <memory>
#include <utility>

namespace pglease::detail {

/// lease::run_fenced() on @p grant for its owner's run_fenced(): lease_lost
/// (with the text @p not_held() makes) before any I/O when there is no
/// grant; a fence rejection or an eviction (lease_lost, lease_evicted) has
/// marked the lease lost, and wakes @p owner_db's waiter so the owner ends
/// the term at once, then is rethrown.
template <typename Message, typename F>
auto run_fenced_grant(const std::shared_ptr<lease>& grant, Message&& not_held, backend& owner_db,
                      pqxx::connection_base& conn, F&& fn) {
    if (!grant)
        throw lease_lost{not_held()};
    try {
        return grant->run_fenced(conn, std::forward<F>(fn));
    } catch (const lease_lost&) {
        owner_db.interrupt();
        throw;
    }
}

} // namespace pglease::detail
