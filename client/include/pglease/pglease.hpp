/// @file pglease.hpp
/// @brief Everything of the pglease client: include this one header.
#pragma once

#include "pglease/backend.hpp"
#include "pglease/clock.hpp"
#include "pglease/connection_options.hpp"
#include "pglease/election.hpp"
#include "pglease/elector.hpp"
#include "pglease/elector_config.hpp"
#include "pglease/error.hpp"
#include "pglease/fence.hpp"
#include "pglease/group.hpp"
#include "pglease/handover.hpp"
#include "pglease/identity.hpp"
#include "pglease/lease.hpp"
#include "pglease/lease_options.hpp"
#include "pglease/lease_view.hpp"
#include "pglease/observer.hpp"
#include "pglease/observer_options.hpp"
#include "pglease/pq_backend.hpp"
#include "pglease/scoped_lease.hpp"
#include "pglease/stop_token.hpp"
