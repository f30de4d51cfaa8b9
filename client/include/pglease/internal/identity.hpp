/// @file identity.hpp
/// @brief Default holder identities.
#pragma once

#include <string>

namespace pglease {

/// A holder identity unique to this process and call: "host:pid:suffix",
/// where suffix is 8 random hex digits (from std::random_device), so two
/// leases or electors in one process, or a restarted process that reuses a
/// pid, never share an identity. At most 255 bytes (the host name is cut).
///
/// @code
///   std::string me = pglease::default_identity();   // "web-3:4242:9f2c01ab"
/// @endcode
[[nodiscard]] std::string default_identity();

} // namespace pglease
