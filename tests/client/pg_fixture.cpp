/// @file pg_fixture.cpp
/// @brief Integration-test helpers.
#include "pg_fixture.hpp"
#include "pglease/internal/pqxx_compat.hpp"

#include <csignal>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>

namespace pglease::test {

std::string unique_name(const std::string& prefix) {
    static std::atomic<int> counter{0};
    static const unsigned salt = std::random_device{}();
    return prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(salt % 100000) + "_" +
           std::to_string(++counter);
}

connection_options env_options(const std::string& application_name) {
    connection_options o;
    o.application_name = application_name;
    return o;
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
        if (pred())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    return pred();
}

void pg_test::SetUp() {
    try {
        m_admin = std::make_unique<pqxx::connection>("");
    } catch (const std::exception& e) {
        FAIL() << "no PostgreSQL server reachable through the PG* environment "
                  "(PGHOST, PGPORT, PGUSER, PGDATABASE): "
               << e.what();
    }
    pqxx::nontransaction tx{*m_admin};
    // Either edition: the C extension, or the SQL edition (as an extension,
    // or installed with psql -f: its settings table is then on the path).
    const auto r =
        tx.exec("SELECT 1 FROM pg_extension WHERE extname IN ('pg_lease', 'pg_lease_sql') "
                "UNION ALL SELECT 1 WHERE to_regclass('lease_sql_settings') IS NOT NULL");
    ASSERT_GE(r.size(), 1U) << "neither CREATE EXTENSION pg_lease nor the SQL edition "
                               "(pg_lease_sql) has been installed in this database";
}

pg_test::status pg_test::lease_status(const std::string& name) {
    pqxx::nontransaction tx{*m_admin};
    const auto r = pqxx_compat::exec_params(
        tx, "SELECT coalesce(holder, ''), epoch, valid FROM lease_status WHERE name = $1", name);
    status s;
    if (!r.empty()) {
        s.holder = r[0][0].as<std::string>();
        s.epoch = r[0][1].as<std::int64_t>();
        s.valid = r[0][2].as<bool>();
    }
    return s;
}

void pg_test::make_fenced_table(const std::string& table, const std::string& lease) {
    pqxx::work tx{*m_admin};
    tx.exec("CREATE TABLE " + tx.quote_name(table) +
            " (id serial PRIMARY KEY, note text, epoch bigint)");
    pqxx_compat::exec_params(tx, "SELECT lease_fence($1::regclass, $2)", table, lease);
    tx.commit();
}

int pg_test::terminate(const std::string& app) {
    pqxx::nontransaction tx{*m_admin};
    const auto r =
        pqxx_compat::exec_params(tx,
                                 "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
                                 "FROM pg_stat_activity WHERE application_name = $1",
                                 app);
    return r[0][0].as<int>();
}

child_process::child_process(
    const std::function<int(const std::function<void(const std::string&)>&, int)>& body) {
    int up[2];
    int down[2];
    if (::pipe(up) != 0 || ::pipe(down) != 0)
        throw std::runtime_error{"pipe failed"};
    m_pid = ::fork();
    if (m_pid < 0)
        throw std::runtime_error{"fork failed"};
    if (m_pid == 0) {
        ::close(up[0]);
        ::close(down[1]);
        const int out = up[1];
        const auto write_line = [out](const std::string& line) {
            const std::string l = line + "\n";
            [[maybe_unused]] const auto n = ::write(out, l.data(), l.size());
        };
        int code = 99;
        try {
            code = body(write_line, down[0]);
        } catch (const std::exception& e) {
            write_line(std::string{"exception "} + e.what());
        }
        ::_exit(code);
    }
    ::close(up[1]);
    ::close(down[0]);
    m_from_child = up[0];
    m_to_child = down[1];
}

child_process::~child_process() {
    if (!m_reaped && m_pid > 0) {
        ::kill(m_pid, SIGKILL);
        ::kill(m_pid, SIGCONT);
        (void)wait();
    }
    ::close(m_from_child);
    ::close(m_to_child);
}

std::optional<std::string> child_process::read_line(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (const auto nl = m_buffer.find('\n'); nl != std::string::npos) {
            std::string line = m_buffer.substr(0, nl);
            m_buffer.erase(0, nl + 1);
            return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            return std::nullopt;
        pollfd p{m_from_child, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
            continue;
        char buf[256];
        const auto n = ::read(m_from_child, buf, sizeof buf);
        if (n <= 0)
            return std::nullopt;
        m_buffer.append(buf, static_cast<std::size_t>(n));
    }
}

void child_process::poke() {
    const char b = 1;
    [[maybe_unused]] const auto n = ::write(m_to_child, &b, 1);
}

void child_process::signal(int sig) {
    ::kill(m_pid, sig);
}

int child_process::wait() {
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_reaped = true;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

} // namespace pglease::test
