/// @file pg.cpp
/// @brief libpq session for the load loops.
#include "pg.hpp"

#include <stdexcept>

namespace bench {

namespace {

[[noreturn]] void fail(PGconn* c, const std::string& what, PGresult* r = nullptr) {
    std::string msg = what + ": ";
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    if (state)
        msg += std::string{"["} + state + "] ";
    msg += r ? PQresultErrorMessage(r) : PQerrorMessage(c);
    if (r)
        PQclear(r);
    throw std::runtime_error(msg);
}

PGresult* check(PGconn* c, PGresult* r, const std::string& what) {
    const ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
        fail(c, what, r);
    return r;
}

std::vector<const char*> pointers(const std::vector<std::string>& params) {
    std::vector<const char*> p;
    p.reserve(params.size());
    for (const auto& s : params)
        p.push_back(s.c_str());
    return p;
}

} // namespace

pg_session::pg_session(const std::string& conninfo)
    : m_conn(PQconnectdb(conninfo.c_str())) {
    if (PQstatus(m_conn) != CONNECTION_OK) {
        std::string msg = std::string{"connect: "} + PQerrorMessage(m_conn);
        PQfinish(m_conn);
        throw std::runtime_error(msg);
    }
}

pg_session::~pg_session() {
    PQfinish(m_conn);
}

void pg_session::exec(const std::string& sql) {
    PQclear(check(m_conn, PQexec(m_conn, sql.c_str()), sql));
}

pg_result pg_session::query(const std::string& sql, const std::vector<std::string>& params) {
    const auto p = pointers(params);
    return pg_result{check(m_conn,
                           PQexecParams(m_conn, sql.c_str(), static_cast<int>(p.size()), nullptr,
                                        p.data(), nullptr, nullptr, 0),
                           sql)};
}

void pg_session::prepare(const std::string& name, const std::string& sql) {
    PQclear(check(m_conn, PQprepare(m_conn, name.c_str(), sql.c_str(), 0, nullptr), sql));
}

pg_result pg_session::run(const std::string& name, const std::vector<std::string>& params) {
    const auto p = pointers(params);
    return pg_result{check(m_conn,
                           PQexecPrepared(m_conn, name.c_str(), static_cast<int>(p.size()),
                                          p.data(), nullptr, nullptr, 0),
                           name)};
}

void pg_session::pipeline(const std::vector<pg_call>& calls) {
    if (PQenterPipelineMode(m_conn) != 1)
        fail(m_conn, "enter pipeline");
    for (const auto& c : calls) {
        const auto p = pointers(c.params);
        const int ok = c.name.empty()
                           ? PQsendQueryParams(m_conn, c.sql.c_str(), static_cast<int>(p.size()),
                                               nullptr, p.data(), nullptr, nullptr, 0)
                           : PQsendQueryPrepared(m_conn, c.name.c_str(), static_cast<int>(p.size()),
                                                 p.data(), nullptr, nullptr, 0);
        if (ok != 1)
            fail(m_conn, "pipeline send");
    }
    if (PQpipelineSync(m_conn) != 1)
        fail(m_conn, "pipeline sync");
    std::string error;
    for (std::size_t i = 0; i < calls.size(); ++i) {
        PGresult* r = PQgetResult(m_conn);
        if (r == nullptr)
            fail(m_conn, "pipeline: missing result");
        const ExecStatusType s = PQresultStatus(r);
        if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK && error.empty()) {
            const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
            error =
                (state ? std::string{"["} + state + "] " : std::string{}) + PQresultErrorMessage(r);
        }
        PQclear(r);
        PQclear(PQgetResult(m_conn)); // the NULL that ends this query's results
    }
    PGresult* sync = PQgetResult(m_conn);
    const bool synced = sync && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
    PQclear(sync);
    if (!synced)
        fail(m_conn, "pipeline: no sync");
    PQexitPipelineMode(m_conn);
    if (!error.empty()) {
        PQclear(PQexec(m_conn, "ROLLBACK"));
        throw std::runtime_error("pipeline: " + error);
    }
}

std::string pg_array(const std::vector<std::string>& items) {
    std::string out{"{"};
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i)
            out += ',';
        out += items[i];
    }
    return out + "}";
}

} // namespace bench
