/// @file main.cpp
/// @brief `pglease`: parse the command line, run the subcommand.
#include "commands.hpp"
#include "common/exit_codes.hpp"
#include "common/options.hpp"

#include <iostream>

int main(int argc, char** argv) {
    using namespace pglease::cli;
    const std::vector<std::string> args(argv + 1, argv + argc);
    const parse_result parsed = parse_command_line(args);
    if (parsed.exit_code >= 0) {
        std::cout << parsed.out << std::flush;
        std::cerr << parsed.err << std::flush;
        return parsed.exit_code;
    }
    const parsed_command& c = parsed.command;
    const global_options& g = c.global;
    using kind = parsed_command::kind;
    try {
        switch (c.what) {
        case kind::run:
            return cmd_run(g, c.run);
        case kind::status:
            if (c.view.server)
                return cmd_status_server(g, c.view.json);
            if (!c.view.group.empty())
                return cmd_group_status(g, c.view.group, c.view.json);
            if (c.view.summary)
                return cmd_status_summary(g, c.view.prefix, c.view.json);
            return cmd_status(g, c.view.lease, c.view.prefix, c.view.json);
        case kind::watch:
            return cmd_watch(g, c.view.lease, c.view.json, c.view.count);
        case kind::acquire:
            return cmd_acquire(g, c.primitive);
        case kind::renew:
            return cmd_renew(g, c.primitive);
        case kind::release:
            return cmd_release(g, c.primitive);
        case kind::revoke:
            return cmd_revoke(g, c.primitive);
        case kind::fence:
            return cmd_fence(g, c.fence.table, c.fence.lease, c.fence.column);
        case kind::unfence:
            return cmd_unfence(g, c.fence.table);
        case kind::none:
            break;
        }
    } catch (const std::exception& e) {
        return report_error(e);
    }
    std::cerr << "pglease: a subcommand is required\nRun with --help for more information."
              << std::endl;
    return exit_usage;
}
