/// @file peer_args.hpp
/// @brief What pglease_peer's modes share: the flags (Go peers' style:
/// -name value, durations as 2s or 300ms), one line of output at a time,
/// and the wait for "resign" on stdin.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>

namespace peer {

using ms = std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

inline std::map<std::string, std::string> opt;

inline std::string get(const std::string& k, const std::string& def) {
    const auto it = opt.find(k);
    return it == opt.end() ? def : it->second;
}

/// Durations as the Go peers take them: 2s, 300ms, 1.5s.
inline ms millis(const std::string& k, const std::string& def) {
    const std::string v = get(k, def);
    if (v.size() > 2 && v.compare(v.size() - 2, 2, "ms") == 0)
        return ms{std::stol(v.substr(0, v.size() - 2))};
    if (!v.empty() && v.back() == 's')
        return ms{static_cast<long>(std::stod(v.substr(0, v.size() - 1)) * 1000)};
    return ms{std::stol(v)};
}

inline std::mutex out_mutex;

template <typename... T>
void say(const T&... fields) {
    std::lock_guard<std::mutex> lock{out_mutex};
    bool first = true;
    ((std::cout << (first ? "" : " ") << fields, first = false), ...);
    std::cout << std::endl;
}

inline long long now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

inline std::string identity() {
    return get("id", "pg" + std::to_string(getpid()));
}

/// Blocks until "resign" (or EOF) on stdin, at most `bound`; each (at most
/// 50 ms apart) calls tick, so the wait can watch something. "resign ID"
/// names a successor: returns ID ("" for a plain resign). Woken at once by
/// the line (no polling on the timed path of a handover).
inline std::string wait_resign(ms bound = ms{120000}, const std::function<void()>& tick = {}) {
    struct shared {
        std::mutex mutex;
        std::condition_variable cv;
        bool done = false;
        std::string successor;
    };
    // shared with the reader, which may outlive this call (detached)
    auto sh = std::make_shared<shared>();
    std::thread reader([sh] {
        std::string line, successor;
        while (std::getline(std::cin, line)) {
            if (line == "resign")
                break;
            if (line.rfind("resign ", 0) == 0) {
                successor = line.substr(7);
                break;
            }
        }
        const std::lock_guard<std::mutex> lock{sh->mutex};
        sh->successor = successor;
        sh->done = true;
        sh->cv.notify_all();
    });
    reader.detach(); // a reader still blocked at the bound ends with the process
    const auto until = steady::now() + bound;
    std::unique_lock<std::mutex> lock{sh->mutex};
    while (!sh->done && steady::now() < until) {
        sh->cv.wait_until(lock, std::min(until, steady::now() + ms{50}));
        if (tick && !sh->done) {
            lock.unlock();
            tick();
            lock.lock();
        }
    }
    return sh->successor;
}

/// The 100,000-lease figure's side (pglease_peer_many.cpp).
int many();

} // namespace peer
