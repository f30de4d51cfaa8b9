/// @file testing.hpp
/// @brief The test double: unit-test leader-only code without a database.
///
/// Link pglease::testing (pkg-config pglease-testing). A lease_store is an
/// in-memory pg_lease with a manual clock; connect() gives the backend a
/// lease, elector or scoped_lease runs on; testing::run_fenced() stands in
/// for run_fenced() on a connection. See docs/cpp.md, "Testing your code
/// without a database", and examples/testing/.
///
/// @code
///   pglease::testing::lease_store store;
///   pglease::elector e{cfg, store.connect(), store.clock()};
///   e.start();
///   store.mark_held(cfg.lease_name, cfg.identity);  // this process leads
///   ASSERT_TRUE(e.leading());
///   store.mark_held_elsewhere(cfg.lease_name);      // someone else: lost at the next renew
///   store.advance(cfg.ttl);                         // time passes
///   ASSERT_FALSE(e.leading());
/// @endcode
#pragma once

#include "pglease/testing/lease_store.hpp"
#include "pglease/testing/manual_clock.hpp"
#include "pglease/testing/run_fenced.hpp"
