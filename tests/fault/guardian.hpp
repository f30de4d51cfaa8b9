/// @file guardian.hpp
/// @brief Nothing of the suite outlives it: clusters and pgbouncer under
/// the work directory are stopped at the end, or by a guardian process if
/// the suite itself is killed (ctest's timeout sends SIGKILL).
#pragma once

#include <string>

namespace fault {

/// Stops every cluster and pgbouncer under @p root; removes it unless @p keep
/// or a file KEEP exists in it (a failed run keeps its histories).
void cleanup_root(const std::string& root, bool keep);

/// Forks a child that waits for this process to die, then cleanup_root().
void start_guardian(const std::string& root, bool keep);

} // namespace fault
