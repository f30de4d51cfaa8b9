/// @file self_test.hpp
/// @brief `pglease_fault --self-test`: the checker on hand-made histories
/// in the recorded format, each breaking exactly one invariant, and clean
/// ones. Proves that every check can fail.
#pragma once

#include <string>

namespace fault {

/// Runs every case; prints one line each; writes each bundle to
/// @p dump_dir when not empty. Returns the exit status (0: all as expected).
int run_self_test(const std::string& dump_dir);

} // namespace fault
