/// @file check_context.hpp
/// @brief What the checks of one phase share: parameters, attribution of
/// observations to fault kinds, violation records with their history.
#pragma once

#include "checker.hpp"

#include <cstdint>
#include <set>
#include <string>

namespace fault {

class check_context {
public:
    explicit check_context(const phase_bundle& b);

    const phase_bundle& b;
    std::int64_t ttl, margin, retry, takeover, bound;
    std::int64_t t0 = 0;              ///< earliest record (printing)
    std::vector<fault_record> faults; ///< sorted by time
    phase_report report;

    /// The stats of the fault kind in effect on @p lease at @p t.
    kind_stats& at(const std::string& lease, std::int64_t t);
    /// Records a violation of @p invariant with the history of @p lease
    /// around @p t (restricted to @p who when given).
    void violation(const std::string& invariant, const std::string& what, const std::string& lease,
                   std::int64_t t, const std::set<std::string>& who = {},
                   const std::string& kind = {});
    /// @p t as milliseconds since the phase's first record.
    [[nodiscard]] std::string ms(std::int64_t t) const;

private:
    [[nodiscard]] std::string around(const std::string& lease, std::int64_t from, std::int64_t to,
                                     const std::set<std::string>& who) const;
};

/// A record's time: its send time t0 if any, else t.
std::int64_t time_of(const nlohmann::json& r);
/// op / r of a record, "" when absent.
std::string op_of(const nlohmann::json& r);
std::string res_of(const nlohmann::json& r);

void check_grants(check_context& c);     ///< I1, I5
void check_writes(check_context& c);     ///< I2, I3, B1
void check_beliefs(check_context& c);    ///< I4 (+ counted model/callback overlaps)
void check_liveness(check_context& c);   ///< liveness, rejoin, recovery figures
void check_long_txns(check_context& c);  ///< I6
void check_floors(check_context& c);     ///< floor
void check_downstream(check_context& c); ///< I2d (+ the downstream phase's floors)

} // namespace fault
