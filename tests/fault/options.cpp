/// @file options.cpp
/// @brief Parsing pglease_fault's command line; the interrupt flag.
#include "options.hpp"

#include <signal.h>

#include <atomic>
#include <random>
#include <sstream>
#include <stdexcept>

namespace fault {
namespace {

std::atomic<bool> g_interrupted{false};

void on_signal(int /*sig*/) {
    g_interrupted.store(true);
}

std::set<std::string> split(const std::string& v) {
    std::set<std::string> out;
    std::stringstream ss{v};
    std::string k;
    while (std::getline(ss, k, ','))
        if (!k.empty())
            out.insert(k);
    return out;
}

} // namespace

bool interrupted() noexcept {
    return g_interrupted.load();
}

void install_interrupt_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
}

settings parse_options(int argc, char** argv) {
    settings s;
    s.seed = static_cast<unsigned>(std::random_device{}());
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc)
                throw std::invalid_argument("missing value for " + a);
            return argv[++i];
        };
        if (a == "--profile")
            s.profile = next();
        else if (a == "--edition")
            s.edition = next();
        else if (a == "--seed")
            s.seed = static_cast<unsigned>(std::stoul(next()));
        else if (a == "--duration")
            s.duration_s = std::stoi(next());
        else if (a == "--keep")
            s.keep = true;
        else if (a == "--only")
            s.only = split(next());
        else if (a == "--disable-nemesis")
            s.disabled = split(next());
        else if (a == "--report")
            s.report = next();
        else if (a == "--self-test")
            s.self_test = true;
        else if (a == "--clock-check")
            s.clock_check = true;
        else if (a == "--dump")
            s.dump = next();
        else if (a == "--replay")
            s.replay = next();
        else
            throw std::invalid_argument("unknown option " + a);
    }
    if (s.profile != "short" && s.profile != "soak")
        throw std::invalid_argument("unknown profile " + s.profile);
    if (s.edition != "c" && s.edition != "sql")
        throw std::invalid_argument("unknown edition " + s.edition + " (c or sql)");
    return s;
}

} // namespace fault
