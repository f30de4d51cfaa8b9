/// @file cluster.cpp
/// @brief Cluster and pgbouncer control through initdb, pg_ctl,
/// pg_basebackup and pgbouncer, as tests/harness/pg_cluster.sh does.
#include "cluster.hpp"

#include "common.hpp"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fault {

void give_to_postgres(const std::string& path) {
    chmod(path.c_str(), 0755);
    if (geteuid() != 0)
        return;
    if (const passwd* pw = getpwnam("postgres"))
        if (chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0)
            throw std::runtime_error("chown " + path + " failed");
}

std::string pg_bin() {
    const char* env = std::getenv("PG_BIN");
    return env != nullptr && *env != '\0' ? std::string{env} : "/usr/lib/postgresql/15/bin";
}

namespace {
bool g_sql = false;
std::string g_script;
} // namespace

void use_sql_edition(const std::string& script) {
    g_sql = true;
    g_script = script;
}

bool sql_edition() noexcept {
    return g_sql;
}

const std::string& sql_edition_script() noexcept {
    return g_script;
}

const char* app_db() noexcept {
    return g_sql ? "app" : "postgres";
}

const char* app_user() noexcept {
    return g_sql ? "app_user" : "postgres";
}

const char* owner_role() noexcept {
    return g_sql ? "app_owner" : "postgres";
}

namespace {
std::string bin(const char* name) {
    return pg_bin() + "/" + name;
}

void must(int rc, const std::string& what, const std::string& log) {
    if (rc != 0)
        throw std::runtime_error(what + " failed (status " + std::to_string(rc) + "), see " + log);
}
} // namespace

cluster::cluster(const std::string& root, const std::string& name)
    : m_dir{root + "/" + name}
    , m_log{root + "/" + name + "/server.log"}
    , m_port{free_port()} {
    mkdir(m_dir.c_str(), 0755);
    give_to_postgres(m_dir);
    set_clock_offset(0);
}

std::string cluster::conninfo() const {
    return "host=127.0.0.1 port=" + std::to_string(m_port) + " user=postgres dbname=" + app_db() +
           " connect_timeout=5";
}

std::string cluster::app_conninfo() const {
    return "host=127.0.0.1 port=" + std::to_string(m_port) + " user=" + app_user() +
           " dbname=" + app_db() + " connect_timeout=5";
}

std::string cluster::owner_conninfo(const std::string& db) const {
    return "host=127.0.0.1 port=" + std::to_string(m_port) + " user=" + owner_role() +
           " dbname=" + db + " connect_timeout=5";
}

void cluster::append_conf(const std::vector<std::string>& conf) const {
    std::ofstream out{data() + "/postgresql.conf", std::ios::app};
    out << "\n# fault suite\n";
    out << "port = " << m_port << "\n";
    out << "unix_socket_directories = '" << m_dir << "'\n";
    for (const auto& line : conf)
        out << line << "\n";
}

void cluster::init(const std::vector<std::string>& conf) {
    must(run_command({bin("initdb"), "-D", data(), "-A", "trust", "-U", "postgres", "--no-sync",
                      "-E", "UTF8", "--locale=C.UTF-8"},
                     true, {}, m_dir + "/initdb.log", 120),
         "initdb", m_dir + "/initdb.log");
    append_conf(conf);
}

void cluster::basebackup_from(const cluster& primary, const std::vector<std::string>& conf) {
    must(run_command({bin("pg_basebackup"), "-h", "127.0.0.1", "-p", std::to_string(primary.port()),
                      "-U", "postgres", "-D", data(), "-R", "-X", "stream", "-c", "fast"},
                     true, {}, m_dir + "/basebackup.log", 120),
         "pg_basebackup", m_dir + "/basebackup.log");
    append_conf(conf);
}

void cluster::start(bool faketime) {
    std::vector<std::string> env;
    if (faketime) {
        // A copy the postgres user can read, wherever the build tree is.
        const std::string shim = m_dir + "/faketime_shim.so";
        std::filesystem::copy_file(faketime_shim, shim,
                                   std::filesystem::copy_options::overwrite_existing);
        give_to_postgres(shim);
        env = {"LD_PRELOAD=" + shim + ":" + faketime_lib, "FAKETIME_NO_CACHE=1",
               "FAKETIME_DONT_FAKE_MONOTONIC=1", "FAKETIME_TIMESTAMP_FILE=" + clock_file()};
        m_faketime = true;
    }
    must(run_command({bin("pg_ctl"), "-D", data(), "-l", m_log, "-w", "-t", "60", "start"}, true,
                     env, m_dir + "/pg_ctl.log", 90),
         "pg_ctl start", m_log);
    m_started = true;
}

void cluster::stop(const std::string& mode) {
    if (!m_started)
        return;
    run_command({bin("pg_ctl"), "-D", data(), "-m", mode, "-w", "-t", "60", "stop"}, true, {},
                m_dir + "/pg_ctl.log", 90);
    m_started = false;
}

void cluster::promote() {
    must(run_command({bin("pg_ctl"), "-D", data(), "-w", "-t", "60", "promote"}, true, {},
                     m_dir + "/pg_ctl.log", 90),
         "pg_ctl promote", m_dir + "/pg_ctl.log");
}

void cluster::configure(const std::string& line, bool reload) {
    append_conf({line});
    if (reload && m_started)
        run_command({bin("pg_ctl"), "-D", data(), "reload"}, true, {}, m_dir + "/pg_ctl.log", 30);
}

void cluster::wipe() {
    run_command({"rm", "-rf", data()}, false, {}, "", 60);
}

void cluster::set_clock_offset(int seconds) const {
    const std::string tmp = clock_file() + ".tmp";
    {
        std::ofstream out{tmp, std::ios::trunc};
        out << (seconds >= 0 ? "+" : "") << seconds << "\n";
    }
    chmod(tmp.c_str(), 0644);
    std::rename(tmp.c_str(), clock_file().c_str()); // atomic: the reader never sees it empty
}

bouncer::bouncer(const std::string& root, const cluster& target)
    : m_dir{root + "/pgbouncer"}
    , m_port{free_port()}
    , m_target_port{target.port()} {
    mkdir(m_dir.c_str(), 0755);
    give_to_postgres(m_dir);
    {
        std::ofstream users{m_dir + "/userlist.txt"};
        users << "\"postgres\" \"\"\n";
        if (sql_edition())
            users << "\"" << app_user() << "\" \"\"\n";
    }
    std::ofstream ini{m_dir + "/pgbouncer.ini"};
    ini << "[databases]\n"
        << app_db() << " = host=127.0.0.1 port=" << m_target_port << " dbname=" << app_db() << "\n"
        << "[pgbouncer]\n"
        << "listen_addr = 127.0.0.1\n"
        << "listen_port = " << m_port << "\n"
        << "unix_socket_dir =\n"
        << "auth_type = trust\n"
        << "auth_file = " << m_dir << "/userlist.txt\n"
        << "pool_mode = transaction\n"
        << "max_client_conn = 400\n"
        << "default_pool_size = 40\n"
        << "ignore_startup_parameters = extra_float_digits,options,statement_timeout\n"
        << "logfile = " << m_dir << "/pgbouncer.log\n"
        << "pidfile = " << m_dir << "/pgbouncer.pid\n";
}

bouncer::~bouncer() {
    stop();
}

void bouncer::start() {
    const int rc = run_command({"pgbouncer", "-d", m_dir + "/pgbouncer.ini"}, true, {},
                               m_dir + "/start.log", 30);
    if (rc != 0)
        throw std::runtime_error("pgbouncer failed to start, see " + m_dir);
    m_started = true;
    sleep_ms(300);
}

void bouncer::stop() noexcept {
    if (!m_started)
        return;
    m_started = false;
    std::ifstream pidfile{m_dir + "/pgbouncer.pid"};
    int pid = 0;
    if (pidfile >> pid && pid > 0) {
        kill(pid, SIGTERM);
        for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i)
            sleep_ms(20);
        kill(pid, SIGKILL);
    }
}

std::string bouncer::conninfo() const {
    return "host=127.0.0.1 port=" + std::to_string(m_port) + " user=" + app_user() +
           " dbname=" + app_db();
}

} // namespace fault
