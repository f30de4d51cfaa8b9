/// @file pglease.hpp
/// @brief Everything of the pglease client: include this one header.
///
/// The public headers are the ones below (docs/cpp.md, "The public
/// headers", says what each is for) and testing.hpp, the test double.
/// pglease/internal/ holds what they need: its types are the library's,
/// its file names are not (include them through a public header).
#pragma once

#include "pglease/backend.hpp"
#include "pglease/connection_options.hpp"
#include "pglease/elector.hpp"
#include "pglease/elector_config.hpp"
#include "pglease/error.hpp"
#include "pglease/fence.hpp"
#include "pglease/group.hpp"
#include "pglease/group_config.hpp"
#include "pglease/lease.hpp"
#include "pglease/lease_options.hpp"
#include "pglease/lease_set.hpp"
#include "pglease/lease_set_config.hpp"
#include "pglease/observer.hpp"
#include "pglease/observer_options.hpp"
#include "pglease/pq_backend.hpp"
#include "pglease/scoped_lease.hpp"

// No public header above needs these two; they are API all the same:
// raise_downstreams() for a holder of your own, qualified_name() for SQL.
#include "pglease/internal/downstream.hpp"
#include "pglease/internal/sql_name.hpp"
