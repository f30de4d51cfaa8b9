/// @file member.cpp
/// @brief A member process: shard work is a fenced insert per interval.
#include "member.hpp"

#include "pglease/error.hpp"
#include "pglease/group.hpp"

#include <pqxx/pqxx>

#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

namespace pglease::group_fault {
namespace {

std::atomic<bool> g_term{false};

void on_term(int) {
    g_term.store(true);
}

} // namespace

int run_member(const std::string& group, int shards, const std::string& identity, int write_ms) {
    std::signal(SIGTERM, on_term);
    group_member* self = nullptr;
    group_config cfg;
    cfg.group = group;
    cfg.shards = numbered_shards("s", static_cast<std::size_t>(shards));
    cfg.identity = identity;
    cfg.ttl = std::chrono::milliseconds{timing::ttl_ms};
    cfg.renew_deadline = std::chrono::milliseconds{timing::renew_deadline_ms};
    cfg.retry_period = std::chrono::milliseconds{timing::retry_ms};
    cfg.connection.application_name = "gf-" + identity;
    // Shard work waits for its stop token; the fenced writes of every
    // shard held go through one connection (a connection per shard would
    // take 256 of the server's connections).
    cfg.callbacks.on_shard_started = [](const std::string&, std::int64_t, stop_token stop) {
        stop.wait();
    };
    // What a member saw, on stderr (the test's output) for a failure's
    // diagnosis: shards it lost and the members it counted.
    const auto t0 = std::chrono::steady_clock::now();
    const auto stamp = [t0, identity] {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - t0);
        return identity + " +" + std::to_string(ms.count()) + " ms: ";
    };
    cfg.callbacks.on_shard_stopped = [stamp](const std::string& shard, std::int64_t,
                                             shard_stop_reason why) {
        if (why != shard_stop_reason::moved && why != shard_stop_reason::leaving)
            std::cerr << stamp() << shard << " stopped: " << to_string(why) << "\n";
    };
    cfg.callbacks.on_members_changed = [stamp](const std::vector<group_member_info>& members) {
        std::cerr << stamp() << members.size() << " members\n";
    };
    group_member m{cfg};
    self = &m;
    m.start();
    std::unique_ptr<pqxx::connection> conn;
    while (!g_term.load()) {
        const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds{write_ms};
        for (const std::string& shard : self->owned_shards()) {
            try {
                if (!conn)
                    conn = std::make_unique<pqxx::connection>("application_name=gf-work");
                self->run_fenced(shard, *conn, [&](pqxx::work& tx) {
                    // The fence stamps the declared epoch into the row.
                    tx.exec_params0("INSERT INTO gf_writes (shard, member) VALUES ($1, $2)",
                                    std::stoi(shard.substr(2)), identity);
                });
            } catch (const lease_lost&) {
                // refused by the fence, or no longer held: the member stops it
            } catch (const std::exception&) {
                conn.reset();
            }
        }
        while (!g_term.load() && std::chrono::steady_clock::now() < next)
            std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    m.stop();
    return 0;
}

} // namespace pglease::group_fault
