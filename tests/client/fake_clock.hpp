/// @file fake_clock.hpp
/// @brief A manually advanced clock for state-machine tests: the public
/// test double's manual_clock.
#pragma once

#include "pglease/testing/manual_clock.hpp"

namespace pglease::test {

using fake_clock = pglease::testing::manual_clock;

} // namespace pglease::test
