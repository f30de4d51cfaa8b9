/// @file commands.hpp
/// @brief The subcommands of `pglease`, each in a file of its own.
#pragma once

#include "common/common.hpp"
#include "common/run_plan.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pglease::cli {

/// `pglease run` (cmd_run.cpp).
int cmd_run(const global_options& g, const run_args& a);

/// `pglease status [NAME | --prefix P] [--json]` (cmd_status.cpp).
int cmd_status(const global_options& g, const std::string& name, const std::string& prefix,
               bool json);

/// `pglease status --summary [--prefix P] [--json]` (cmd_status_summary.cpp).
int cmd_status_summary(const global_options& g, const std::string& prefix, bool json);

/// `pglease status --server [--json]` (cmd_status_server.cpp).
int cmd_status_server(const global_options& g, bool json);

/// `pglease status --group GROUP [--json]` (cmd_group_status.cpp).
int cmd_group_status(const global_options& g, const std::string& group, bool json);

/// `pglease watch [NAME] [--json] [--count N]` (cmd_watch.cpp).
int cmd_watch(const global_options& g, const std::string& name, bool json, long count);

/// `pglease acquire|renew|release|revoke` (cmd_primitives.cpp).
int cmd_acquire(const global_options& g, const primitive_args& a);
int cmd_renew(const global_options& g, const primitive_args& a);
int cmd_release(const global_options& g, const primitive_args& a);
int cmd_revoke(const global_options& g, const primitive_args& a);

/// `pglease fence TABLE --lease NAME [--column C]`, `pglease unfence TABLE` (cmd_fence.cpp).
int cmd_fence(const global_options& g, const std::string& table, const std::string& lease,
              const std::string& column);
int cmd_unfence(const global_options& g, const std::string& table);

} // namespace pglease::cli
