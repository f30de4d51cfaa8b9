/// @file pg_fixture.hpp
/// @brief Helpers for the integration tests: the server from the PG*
/// environment (a test FAILS when none is reachable), unique lease names,
/// forked child processes that report over a pipe.
#pragma once

#include "pglease/connection_options.hpp"

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace pglease::test {

/// A name no other test (or test run) uses.
[[nodiscard]] std::string unique_name(const std::string& prefix);

/// Options for the server of the PG* environment, with @p application_name.
[[nodiscard]] connection_options env_options(const std::string& application_name = "pglease-test");

/// Polls @p pred every 5 ms until it holds or @p timeout passes.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

/// Every integration test: connects with an empty conninfo (PG* variables)
/// and requires the pg_lease extension; fails loudly otherwise.
class pg_test : public ::testing::Test {
protected:
    void SetUp() override;

    /// An administrative connection (superuser in the harness).
    pqxx::connection& admin() { return *m_admin; }

    /// lease_status row of @p name: (holder or "", epoch, valid).
    struct status {
        std::string holder;
        std::int64_t epoch = 0;
        bool valid = false;
    };
    [[nodiscard]] status lease_status(const std::string& name);

    /// Creates table @p table (id serial, note text, epoch bigint) fenced by
    /// lease @p lease.
    void make_fenced_table(const std::string& table, const std::string& lease);

    /// Terminates every session whose application_name is @p app; returns
    /// how many.
    int terminate(const std::string& app);

private:
    std::unique_ptr<pqxx::connection> m_admin;
};

/// A forked child that writes lines to the parent. The child body must not
/// use gtest; its return value is the exit code. The destructor kills and
/// reaps a child that is still running.
class child_process {
public:
    /// Forks; the child runs @p body(write_line) and _exit()s.
    explicit child_process(const std::function<int(const std::function<void(const std::string&)>&,
                                                   int read_fd)>& body);
    ~child_process();
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;
    child_process(child_process&&) = delete;
    child_process& operator=(child_process&&) = delete;

    /// Next line from the child, or nullopt after @p timeout or at EOF.
    std::optional<std::string> read_line(std::chrono::milliseconds timeout);
    /// Writes one byte the child can read from its read_fd.
    void poke();
    void signal(int sig);
    /// Waits for exit; returns the exit code (or 128 + signal).
    int wait();

    [[nodiscard]] pid_t pid() const noexcept { return m_pid; }

private:
    pid_t m_pid = -1;
    int m_from_child = -1;
    int m_to_child = -1;
    std::string m_buffer;
    bool m_reaped = false;
};

} // namespace pglease::test
