/// @file run_fenced.hpp
/// @brief Fenced work against a lease_store: the double's run_fenced().
#pragma once

#include "pglease/fence.hpp"
#include "pglease/testing/lease_store.hpp"

#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

namespace pglease::testing {

namespace detail {
/// True for owners that end a term on a reported loss (elector).
template <typename T, typename = void>
struct has_report_lost : std::false_type {};
template <typename T>
struct has_report_lost<T, std::void_t<decltype(std::declval<T&>().report_lost(std::int64_t{}))>>
    : std::true_type {};
} // namespace detail

/// As pglease::run_fenced(conn, token, fn), against @p store: throws
/// fence_rejected (LS001/LS002) exactly when the fence trigger would refuse
/// a write carrying @p token, else returns fn(). There is no transaction:
/// @p fn takes no arguments and what it does is not rolled back.
template <typename F>
auto run_fenced(const lease_store& store, const fence_token& token, F&& fn)
    -> std::invoke_result_t<F> {
    store.fence_check(token);
    return std::invoke(std::forward<F>(fn));
}

/// As @p owner.run_fenced(conn, fn) for an elector, a lease or a
/// scoped_lease, against @p store: lease_lost before anything when the
/// owner does not hold the lease (owner.token()), and on a rejection the
/// owner loses the lease at once (the elector ends the term, a lease's
/// held() turns false), as with a real server.
///
/// @code
///   pglease::testing::run_fenced(elector, store, [&] { done.push_back(job); });
/// @endcode
template <typename Owner, typename F>
auto run_fenced(Owner& owner, const lease_store& store, F&& fn) -> std::invoke_result_t<F> {
    const fence_token token = owner.token();
    try {
        store.fence_check(token);
    } catch (const fence_rejected&) {
        if constexpr (detail::has_report_lost<Owner>::value)
            owner.report_lost(token.epoch);
        else if (owner.epoch() == token.epoch)
            owner.mark_lost();
        throw;
    }
    return std::invoke(std::forward<F>(fn));
}

} // namespace pglease::testing
