/// @file group.hpp
/// @brief Lease groups: balanced, fenced ownership of many shards by the
/// live members of a group. Include this one header.
#pragma once

#include "pglease/group_config.hpp"

#include "pglease/internal/group_assignment.hpp"
#include "pglease/internal/group_member.hpp"
#include "pglease/internal/group_names.hpp"
