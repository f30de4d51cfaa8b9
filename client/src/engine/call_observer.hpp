/// @file call_observer.hpp
/// @brief Internal: calling an application's optional callback from a
/// holder's thread.
#pragma once

#include <utility>

namespace pglease::detail {

/// Calls @p fn (a std::function that may be empty) with @p args. What it
/// throws is the application's failure, never the holder's: it is dropped,
/// so a throwing callback cannot end the loop that renews the leases.
template <typename F, typename... Args>
void call_observer(const F& fn, Args&&... args) noexcept {
    if (!fn)
        return;
    try {
        fn(std::forward<Args>(args)...);
    } catch (...) {
        // The application's failure.
    }
}

} // namespace pglease::detail
