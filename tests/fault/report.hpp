/// @file report.hpp
/// @brief The results: a table per fault kind on stdout, the violations
/// with their histories, and the machine-readable report (--report FILE).
#pragma once

#include "checker.hpp"
#include "options.hpp"

#include <string>
#include <utility>
#include <vector>

namespace fault {

using checked_phase = std::pair<phase_bundle, phase_report>;

/// Prints the results; returns the exit status (1 on any violation).
int print_report(const settings& s, const std::vector<checked_phase>& phases);

/// Writes the JSON report: per phase and per kind: planned, effective,
/// violations per invariant, grants, acknowledged writes, refusals, the
/// longest leaderless time.
void write_json_report(const settings& s, const std::vector<checked_phase>& phases,
                       const std::string& path);

} // namespace fault
