/// @file renew_round.cpp
/// @brief One renew round trip for many leases, its bound, retry jitter.
#include "engine/renew_round.hpp"

#include "pglease/error.hpp"

#include <algorithm>

namespace pglease::detail {

void bound_by(clock::time_point& bound, const lease& l,
              std::chrono::milliseconds renew_deadline) noexcept {
    if (l.held())
        bound = std::min({bound, l.deadline(), l.renewed_at() + renew_deadline});
}

clock::duration jittered(std::chrono::milliseconds retry_period, double jitter_factor,
                         std::mt19937_64& rng) {
    std::uniform_real_distribution<double> factor{1.0, jitter_factor};
    const double ns = std::chrono::duration<double, std::nano>(retry_period).count();
    return std::chrono::duration_cast<clock::duration>(
        std::chrono::duration<double, std::nano>{ns * factor(rng)});
}

renew_round_result renew_round(backend& db, const clock& clk, const holder_config& config,
                               const std::vector<lease*>& batch, clock::time_point bound) {
    std::vector<std::string> names;
    std::vector<std::int64_t> epochs;
    std::vector<clock::time_point> before;
    names.reserve(batch.size());
    epochs.reserve(batch.size());
    before.reserve(batch.size());
    for (const lease* l : batch) {
        names.push_back(l->name());
        epochs.push_back(l->epoch());
        before.push_back(l->deadline());
    }
    renew_round_result result;
    // The time before sending, as lease::renew: the server starts the ttl later.
    result.sent = clk.now();
    try {
        const auto answers = db.renew_many(names, config.identity, epochs, config.ttl, bound);
        for (std::size_t i = 0; i < batch.size(); ++i)
            (void)batch[i]->apply_renewal(result.sent, before[i], epochs[i],
                                          answers[i].has_value());
        result.answered = true;
        result.took = clk.now() - result.sent;
        result.next = result.sent + config.renew_interval();
    } catch (const error&) {
        // Outcome unknown: the deadlines stay; retry, but wake at the renew
        // deadline.
        result.next = std::min(clk.now() + config.retry_period, bound);
    }
    return result;
}

} // namespace pglease::detail
