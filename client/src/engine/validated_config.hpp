/// @file validated_config.hpp
/// @brief Internal: a holder's config as its constructor keeps it.
#pragma once

#include <algorithm>

namespace pglease::detail {

/// @p config validated (config_error otherwise), its calls bounded by its
/// retry period, so a blocked call never outlasts a retry.
template <typename Config>
Config validated(Config config) {
    config.validate();
    config.connection.call_timeout = std::min(config.connection.call_timeout, config.retry_period);
    return config;
}

} // namespace pglease::detail
