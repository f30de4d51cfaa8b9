/// @file fenced_grant.hpp
/// @brief Fenced work on one lease of an owner of many (group_member,
/// lease_set): the shared part of their run_fenced().
#pragma once

#include "pglease/backend.hpp"
#include "pglease/error.hpp"
#include "pglease/fence.hpp"
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
                      pqxx::connection& conn, F&& fn) {
    if (!grant)
        throw lease_lost{not_held()};
    try {
        return grant->run_fenced(conn, std::forward<F>(fn));
    } catch (const lease_lost&) {
        owner_db.interrupt();
        throw;
    }
}

/// The token of @p grant; lease_lost (with @p not_held()'s text) when there
/// is no grant or it is not held.
template <typename Message>
fence_token grant_token(const std::shared_ptr<lease>& grant, Message&& not_held) {
    if (!grant)
        throw lease_lost{not_held()};
    return grant->token();
}

/// The application saw grant @p epoch of @p grant gone: mark it lost and
/// wake @p owner_db's waiter, so the owner ends the term now. No effect for
/// another epoch.
inline void report_grant_lost(const std::shared_ptr<lease>& grant, std::int64_t epoch,
                              backend& owner_db) noexcept {
    if (!grant || grant->epoch() != epoch)
        return;
    grant->mark_lost();
    owner_db.interrupt();
}

} // namespace pglease::detail
