// libFuzzer target: the client's connection-string builder, which hands the
// user's string to libpq's parser and adds timeouts and keepalives.
// Invariant: either config_error, or a string libpq parses again.
#include "pglease/error.hpp"
#include "pq/conninfo.hpp"

#include <libpq-fe.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    pglease::connection_options options;
    options.conninfo.assign(reinterpret_cast<const char*>(data), size);
    if (options.conninfo.find('\0') != std::string::npos)
        return 0; // libpq takes C strings
    std::string built;
    try {
        built = pglease::detail::build_conninfo(options);
    } catch (const pglease::config_error&) {
        return 0;
    }
    char* error = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(built.c_str(), &error);
    if (parsed == nullptr)
        std::abort(); // we produced a string libpq rejects
    PQconninfoFree(parsed);
    return 0;
}
