/// @file cluster.hpp
/// @brief A throwaway PostgreSQL 15 cluster the suite owns: initdb, start
/// (optionally under libfaketime), crash, restart, streaming standby,
/// promotion. As root, server binaries run as the postgres user.
#pragma once

#include <string>
#include <vector>

namespace fault {

/// The PostgreSQL install's bin directory: $PG_BIN when set (a private
/// install, as tests/harness/pg_cluster.sh and scripts/mutants.sh use),
/// else the system's.
std::string pg_bin();
inline constexpr const char* faketime_lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
/// faketime_shim.c, built beside pglease_fault: a server preloads it ahead
/// of faketime_lib, so that its timers keep real time (clock_check.hpp).
inline constexpr const char* faketime_shim = PGLEASE_FAULT_SHIM;

/// The edition every cluster of the run gets (options.hpp --edition): the C
/// extension, created by the superuser in database postgres (the default),
/// or the SQL edition (pg_lease_sql), installed from @p script with psql -f
/// by app_owner, the owner of database app, who is no superuser (with
/// CREATEROLE, CREATEDB and pg_signal_backend, as a managed service's
/// admin role), on a server with no pg_lease library; the workers and the
/// checker then connect as app_user, an application role. Set once, before
/// the first cluster.
void use_sql_edition(const std::string& script);
[[nodiscard]] bool sql_edition() noexcept;
/// The SQL edition's psql script (use_sql_edition).
[[nodiscard]] const std::string& sql_edition_script() noexcept;
/// The database of the leases and fenced tables: postgres (C) or app (SQL).
[[nodiscard]] const char* app_db() noexcept;
/// The role of the workers and the checker: postgres (C) or app_user (SQL).
[[nodiscard]] const char* app_user() noexcept;
/// The role that installs and owns the schema: postgres (C) or app_owner (SQL).
[[nodiscard]] const char* owner_role() noexcept;

class cluster {
public:
    /// A cluster in @p root/@p name on a free loopback port (not created yet).
    cluster(const std::string& root, const std::string& name);

    /// initdb, then append @p conf to postgresql.conf.
    void init(const std::vector<std::string>& conf);
    /// A streaming standby of @p primary (pg_basebackup -R), then @p conf.
    void basebackup_from(const cluster& primary, const std::vector<std::string>& conf);
    /// Starts the postmaster; under libfaketime (wall clock only, behind
    /// faketime_shim) when @p faketime, reading offsets from clock_file().
    void start(bool faketime = false);
    /// Whether it was last started under libfaketime (a restart keeps it).
    [[nodiscard]] bool faketime() const noexcept { return m_faketime; }
    /// pg_ctl stop -m @p mode (fast, immediate).
    void stop(const std::string& mode);
    /// pg_ctl promote -w.
    void promote();
    /// Appends @p line to postgresql.conf and reloads if running.
    void configure(const std::string& line, bool reload);
    /// Removes the data directory (stopped clusters only).
    void wipe();

    /// Steps the server's wall clock to real time + @p seconds (libfaketime).
    void set_clock_offset(int seconds) const;

    [[nodiscard]] int port() const noexcept { return m_port; }
    [[nodiscard]] const std::string& dir() const noexcept { return m_dir; }
    [[nodiscard]] std::string data() const { return m_dir + "/data"; }
    [[nodiscard]] std::string clock_file() const { return m_dir + "/faketime"; }
    /// The superuser's session in app_db() (the environment: the nemesis
    /// ending backends, reading pg_stat_activity, the clock).
    [[nodiscard]] std::string conninfo() const;
    /// app_user()'s session in app_db() (the checker, the controller).
    [[nodiscard]] std::string app_conninfo() const;
    /// owner_role()'s session in database @p db.
    [[nodiscard]] std::string owner_conninfo(const std::string& db) const;
    [[nodiscard]] bool started() const noexcept { return m_started; }

private:
    void append_conf(const std::vector<std::string>& conf) const;
    std::string m_dir;
    std::string m_log;
    int m_port;
    bool m_started = false;
    bool m_faketime = false;
};

/// pgbouncer in transaction pooling mode in front of @p target, run as the
/// postgres user (it refuses root), trust auth with an auth_file.
class bouncer {
public:
    bouncer(const std::string& root, const cluster& target);
    ~bouncer();
    bouncer(const bouncer&) = delete;
    bouncer& operator=(const bouncer&) = delete;
    bouncer(bouncer&&) = delete;
    bouncer& operator=(bouncer&&) = delete;

    void start();
    void stop() noexcept;
    [[nodiscard]] int port() const noexcept { return m_port; }
    [[nodiscard]] std::string conninfo() const;

private:
    std::string m_dir;
    int m_port;
    int m_target_port;
    bool m_started = false;
};

/// Makes @p path owned by postgres (when root) and world-readable.
void give_to_postgres(const std::string& path);

} // namespace fault
