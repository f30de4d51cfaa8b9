/// @file clock_check.hpp
/// @brief `pglease_fault --clock-check`: a server under the suite's
/// libfaketime keeps real-time timers. Its clock stepped +3 s and -3 s (as
/// the clock nemesis does), a 1 s lock_timeout and a 0.5 s
/// statement_timeout must fire on time, not 3 s late (faketime_shim.c).
#pragma once

namespace fault {

/// Returns the exit status (0: every timer fired within its bound).
int run_clock_check();

} // namespace fault
