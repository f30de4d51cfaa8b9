/// @file identity.cpp
/// @brief host:pid:random identities.
#include "pglease/internal/identity.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <random>

namespace pglease {

std::string default_identity() {
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) != 0)
        host[0] = '\0';
    std::string name{host.data()};
    if (name.empty())
        name = "localhost";
    if (name.size() > 200)
        name.resize(200);

    static thread_local std::mt19937 rng{std::random_device{}()};
    std::array<char, 16> suffix{};
    std::snprintf(suffix.data(), suffix.size(), "%08x", static_cast<unsigned>(rng()));
    return name + ':' + std::to_string(::getpid()) + ':' + suffix.data();
}

} // namespace pglease
