/// @file run_plan.cpp
/// @brief Timings of `pglease run`.
#include "common/run_plan.hpp"

#include "common/duration.hpp"

#include <algorithm>

namespace pglease::cli {

using std::chrono::milliseconds;

milliseconds default_kill_after(milliseconds ttl) noexcept {
    return std::min(ttl / 5, milliseconds{10000});
}

std::optional<run_timing> plan_run(milliseconds ttl, std::optional<milliseconds> kill_after,
                                   std::string& error) {
    if (ttl < min_run_ttl) {
        error = "--ttl must be at least " + format_duration(min_run_ttl) + ", not " +
                format_duration(ttl);
        return std::nullopt;
    }
    run_timing t;
    t.ttl = ttl;
    t.safety_margin = std::min(ttl / 10, milliseconds{1000});
    t.kill_after = kill_after.value_or(default_kill_after(ttl));
    if (t.kill_after < milliseconds::zero() || t.kill_after > ttl / 3) {
        error = "--kill-after must be at most a third of --ttl (" + format_duration(ttl / 3) +
                "), so the job is killed before the lease can expire; got " +
                format_duration(t.kill_after);
        return std::nullopt;
    }
    t.renew_every = ttl / 3;
    t.retry = std::clamp(ttl / 10, milliseconds{50}, milliseconds{2000});
    t.call_timeout = std::clamp(ttl / 5, milliseconds{100}, milliseconds{2000});
    return t;
}

} // namespace pglease::cli
