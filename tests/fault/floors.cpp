/// @file floors.cpp
/// @brief Minimum work: a phase fails when it did less than its floors
/// (effective injections per kind, grants, acknowledged fenced
/// transactions, stale writes refused), so a phase cannot pass having
/// proved nothing.
#include "check_context.hpp"

namespace fault {

void check_floors(check_context& c) {
    long grants = 0, acked = 0, refused = 0, by_read = 0;
    for (const auto& [kind, k] : c.report.kinds) {
        grants += k.grants;
        by_read += k.by_read;
        acked += k.acked;
        refused += k.refused;
    }
    for (const auto& [kind, min] : c.b.floors.effective) {
        const int got = c.report.kinds[kind].effective;
        if (got < min)
            c.violation("floor",
                        kind + ": " + std::to_string(got) + " effective injections, floor " +
                            std::to_string(min) + " (planned " +
                            std::to_string(c.report.kinds[kind].planned) + ")",
                        "", 0, {}, kind);
    }
    const auto floor = [&](const char* what, long got, long min) {
        if (got < min)
            c.violation("floor",
                        std::string{what} + ": " + std::to_string(got) + ", floor " +
                            std::to_string(min),
                        "", 0);
    };
    floor("grants", grants, c.b.floors.grants);
    floor("acknowledged fenced transactions", acked, c.b.floors.acked);
    floor("stale writes refused", refused, c.b.floors.refused);
    floor("handovers confirmed by a read", by_read, c.b.floors.by_read);
}

} // namespace fault
