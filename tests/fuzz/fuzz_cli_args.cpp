// libFuzzer target: the `pglease` command line. The input is split at NUL
// bytes into arguments. Invariants: never throws; the outcome is a command
// to run, help (0) or a usage error (2) with a message.
#include "common/options.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args(1);
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == '\0')
            args.emplace_back();
        else
            args.back().push_back(static_cast<char>(data[i]));
    }
    const auto result = pglease::cli::parse_command_line(args);
    if (result.exit_code == -1) {
        if (result.command.what == pglease::cli::parsed_command::kind::none)
            std::abort();
    } else if (result.exit_code == 2) {
        if (result.err.empty())
            std::abort();
    } else if (result.exit_code != 0) {
        std::abort();
    }
    return 0;
}
