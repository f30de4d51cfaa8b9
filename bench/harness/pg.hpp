/// @file pg.hpp
/// @brief A thin libpq session for the load loops: prepared statements,
/// text parameters, and a pipeline that sends a whole transaction in one
/// round trip.
#pragma once

#include <libpq-fe.h>

#include <string>
#include <vector>

namespace bench {

/// One owned PGresult.
class pg_result {
public:
    explicit pg_result(PGresult* r) noexcept : m_r(r) {}
    pg_result(const pg_result&) = delete;
    pg_result& operator=(const pg_result&) = delete;
    pg_result(pg_result&& o) noexcept : m_r(o.m_r) { o.m_r = nullptr; }
    ~pg_result() { PQclear(m_r); }
    [[nodiscard]] int rows() const noexcept { return PQntuples(m_r); }
    [[nodiscard]] bool is_null(int row, int col) const noexcept { return PQgetisnull(m_r, row, col) != 0; }
    [[nodiscard]] std::string text(int row, int col) const { return PQgetvalue(m_r, row, col); }

private:
    PGresult* m_r;
};

/// One statement of a pipeline: a prepared name, or SQL when name is empty.
struct pg_call {
    std::string name;
    std::string sql;
    std::vector<std::string> params;
};

class pg_session {
public:
    explicit pg_session(const std::string& conninfo);
    pg_session(const pg_session&) = delete;
    pg_session& operator=(const pg_session&) = delete;
    ~pg_session();

    void exec(const std::string& sql);                       ///< simple protocol, throws on error
    pg_result query(const std::string& sql, const std::vector<std::string>& params = {});
    void prepare(const std::string& name, const std::string& sql);
    pg_result run(const std::string& name, const std::vector<std::string>& params);
    /// Sends every call, then one Sync: one round trip for a transaction.
    void pipeline(const std::vector<pg_call>& calls);
    [[nodiscard]] PGconn* raw() noexcept { return m_conn; }
    [[nodiscard]] int backend_pid() const noexcept { return PQbackendPID(m_conn); }

private:
    PGconn* m_conn;
};

/// "a,b" -> {"a","b"}; for arrays in text form.
std::string pg_array(const std::vector<std::string>& items);

} // namespace bench
