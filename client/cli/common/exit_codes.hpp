/// @file exit_codes.hpp
/// @brief The exit codes of `pglease` (SPEC section 5), fixed.
#pragma once

namespace pglease::cli {

inline constexpr int exit_ok = 0;    ///< success
inline constexpr int exit_error = 1; ///< an error; the message is on stderr
inline constexpr int exit_usage = 2; ///< bad usage: unknown flag, bad duration, missing argument
inline constexpr int exit_held = 75; ///< the lease is held elsewhere (EX_TEMPFAIL)
inline constexpr int exit_lease_lost = 76; ///< the lease was lost while running

} // namespace pglease::cli
