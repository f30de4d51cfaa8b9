/// @file leader_worker.cpp
/// @brief A minimal leader-elected worker: run several copies, exactly one
/// does the work at a time, and its writes are fenced.
///
///   psql -c "CREATE TABLE ticks (id bigserial PRIMARY KEY, epoch bigint, at timestamptz DEFAULT
///   now())" psql -c "SELECT lease_fence('ticks', 'ticker')" PGHOST=... ./pglease_leader_worker
///   ticker      # start two or three of these
///
/// Connection settings come from the PG* environment (or PGLEASE_CONNINFO).
/// SIGINT / SIGTERM: stop, release the lease (a follower takes over at once).
#include <pglease/pglease.hpp>

#include <pqxx/pqxx>

#include <csignal>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
    const std::string lease = argc > 1 ? argv[1] : "ticker";
    const char* conninfo = std::getenv("PGLEASE_CONNINFO");

    // Signals are taken by sigwait() below, so block them in every thread.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    pglease::elector_config config;
    config.lease_name = lease;
    config.connection.conninfo = conninfo != nullptr ? conninfo : "";
    config.connection.application_name = "pglease-example";

    pglease::elector* self = nullptr; // set below, before start()
    config.callbacks.on_started_leading = [&](std::int64_t epoch, const pglease::stop_token& stop) {
        std::cout << "leading with epoch " << epoch << std::endl;
        pqxx::connection app{config.connection.conninfo}; // the work's own connection
        while (!stop.wait_for(std::chrono::seconds{1})) {
            try {
                self->run_fenced(app, [](pqxx::transaction_base& tx) {
                    tx.exec("INSERT INTO ticks (epoch) SELECT 0"); // the fence stamps the epoch
                });
            } catch (const pglease::lease_lost& e) {
                std::cout << "lost the lease: " << e.what() << std::endl;
                return; // the elector has already ended the term
            } catch (const pglease::error& e) {
                std::cout << "write failed, retrying: " << e.what() << std::endl;
            }
        }
    };
    config.callbacks.on_stopped_leading = [] { std::cout << "stopped leading" << std::endl; };
    config.callbacks.on_new_leader = [&](const std::string& id) {
        std::cout << "leader is " << id << (id == config.identity ? " (me)" : "") << std::endl;
    };

    try {
        pglease::elector elector{config}; // validates; no I/O yet
        self = &elector;
        elector.start();
        int sig = 0;
        sigwait(&signals, &sig);
        std::cout << "signal " << sig << ": stepping down" << std::endl;
    } catch (const pglease::config_error& e) {
        std::cerr << "bad configuration: " << e.what() << std::endl;
        return 2;
    }
    return 0;
}
